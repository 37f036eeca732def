"""`bench list`: what is registered (methods, protocols, model pairs, datasets), as text."""
from __future__ import annotations

from pathlib import Path


def print_registered(what: str, data_dir: Path | None = None) -> None:
    """Every registered method, protocol, model pair or dataset (``what``), one entry a few lines;
    with ``data_dir``, each real dataset's rows read, kept and dropped there."""
    from bench.core.formatting import READOUTS, readout_of
    from bench.core.protocols import DATASETS, MODEL_PAIRS, PROTOCOLS, protocol_hash
    from methods import (
        METHODS,
        describe_params,
        get_method_class,
        load_plugins,
        method_origin,
    )

    if what == "methods":
        load_plugins()
        width = max([11, *map(len, METHODS.names())])   # the names' column
        for name in METHODS.names():
            cls = get_method_class(name)
            origin = method_origin(cls)
            where = "" if origin["kind"] == "built-in" else f" [{origin['kind']}: {origin.get('distribution') or origin.get('file')}]"
            overrides: dict[str, list[str]] = {}   # a model pair's defaults for this method -> the pairs setting them
            for pair in MODEL_PAIRS.names():
                if set_here := MODEL_PAIRS.get(pair).defaults_for(name):
                    overrides.setdefault(", ".join(f"{k}={v}" for k, v in set_here.items()), []).append(pair)
            pairs = "".join(f"\n{'':{width}s} model pairs {', '.join(p)} set {values}" for values, p in overrides.items())
            print(f"{name:{width}s} {cls.summary}{where}\n{'':{width}s} params: {describe_params(cls)}{pairs}\n"
                  f"{'':{width}s} paper: {cls.paper}")
    elif what == "protocols":
        for name in PROTOCOLS.names():
            p = PROTOCOLS.get(name)
            print(f"{name} v{p.version} (hash {protocol_hash(p)}): {p.description}\n"
                  f"  datasets: {', '.join(p.datasets)}"
                  + (f" (sources: {', '.join(p.sources)})" if p.sources != p.datasets else "")
                  + f"; train pool {p.train_pool_size}, test {p.test_size}, "
                  f"max length {p.max_length}, {p.seeds_text}; model pair {p.models or 'tiny'}"
                  + (", every (seed, source) seeded on its own" if p.seeding == "per-source" else "")
                  + (f", best-of-{p.candidates} sets" if p.candidates else ""))
    elif what == "models":
        for name in MODEL_PAIRS.names():
            m = MODEL_PAIRS.get(name)
            defaults = "; ".join(f"{method}: " + ", ".join(f"{k}={v}" for k, v in params) for method, params in m.method_defaults)
            reads = ", ".join(f"{w} {READOUTS[readout_of(spec)][1]}" for w, spec in (("weak", m.weak), ("strong", m.strong)))
            print(f"{name}: weak {m.weak.name} ({m.weak.path}), strong {m.strong.name} ({m.strong.path})\n"
                  f"  {m.description}\n  readout: {reads}\n  method defaults: {defaults or 'none'}"
                  + "".join(f"\n  {role} weights: {text}" for role, spec in (("weak", m.weak), ("strong", m.strong))
                            if (text := weights_source(spec))))
    else:
        for name in DATASETS.names():
            d = DATASETS.get(name)
            revision = dict(d.options).get("revision") or ("latest (the resolved commit is recorded per run)"
                                                           if "hub_id" in dict(d.options) else "generated")
            print(f"{name:18s} {d.category:9s} licence: {d.license}; splits: train {d.train_split}, "
                  f"test {d.test_split}; revision: {revision}\n{'':28s} {d.description}")
            if data_dir and "hub_id" in dict(d.options):
                print(f"{'':28s} {split_counts(d, data_dir)}")


def weights_source(spec) -> str | None:
    """Where a model whose folder a module of this project makes (``path_resolver``: bench.mpnet, bench.smollm2)
    gets its weights and licence, and the one-time step that makes the folder; None for other models."""
    import importlib

    module_name = (spec.path_resolver or "").split(":")[0]
    if not module_name.startswith("bench."):
        return None
    module = importlib.import_module(module_name)
    return f"{module.DESCRIPTION}; made once by `python -m {module_name}`" if hasattr(module, "DESCRIPTION") else None


def split_counts(spec, data_dir: Path) -> str:
    """Rows read, kept and dropped (by reason) of each split found under ``data_dir``."""
    from bench.core.data import load_pairs
    from bench.core.errors import BenchError

    parts = []
    for split in dict.fromkeys((spec.train_split, spec.test_split)):
        try:
            p = load_pairs(spec, split, None, data_dir).provenance
        except BenchError:
            parts.append(f"{split}: not found under {data_dir}")
            continue
        dropped = ", ".join(f"{reason} {n}" for reason, n in p["dropped"].items()) or "none"
        parts.append(f"{split}: {p['kept']:,} of {p['rows_read']:,} rows kept (dropped: {dropped})")
    return "; ".join(parts)
