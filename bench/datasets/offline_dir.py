"""Build a local data dir for ``w2s-shift-v1`` with no Hub: real rows where we have them, schema-exact
stand-ins for the rest.

    python -m bench.datasets.offline_dir DEST [--realdata PATH] [--rows N]

* ``hh-helpful`` / ``hh-harmless``: the real Anthropic hh-rlhf test files (``--realdata``, laid out
  as ``../shared/realdata``), copied line for line into a ``train`` and a ``test`` file of DEST by a
  stable hash of each conversation's opening user turn, normalised (60% / 40%): conversations that
  open alike (one question asked on, or asked again) go to one side, as ``mini`` splits by topic, so
  no test prompt opens a train-pool conversation. The real train splits are not available offline; a
  train pool taken from the real test file is a choice made here, in the open, and recorded: DEST's
  README says so, and each result records the files' sha256.
* ``ultrafeedback``: the real first 500 rows of ``train_prefs`` and of ``test_prefs``
  (``--realdata``'s ``ultrafeedback_binarized``), copied line for line. That copy kept only the
  ``chosen`` and ``rejected`` columns, so the normaliser's score rules do not apply to it (see
  bench/datasets/ultrafeedback.py).
* ``helpsteer3``, ``pku-saferlhf``, ``rail-hh-10k`` (and hh and UltraFeedback when ``--realdata`` is
  not given): rows in the dataset's ORIGINAL schema, generated from the ``mini`` domains (helpful
  ones for the helpful datasets, harmless ones for the harmless), including the traps the
  normalisers handle (HelpSteer3 ties, UltraFeedback equal scores, PKU rows where better != safer,
  RAIL multi-turn contexts). They exercise the real loaders and normalisers end to end; their
  accuracies say nothing about the real datasets. ``--realdata``'s 11 real PKU-SafeRLHF rows are too
  few for a train pool and a test split, so PKU stays synthetic (the tests read those rows).

This is what `bench run --protocol w2s-shift-v1 --data-dir DEST` runs on offline (README: "The real
protocol").
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import random
import re
import shutil
from pathlib import Path

from bench.suites.mini import domains, generate

SYNTHETIC = {  # dataset -> the mini domain its stand-in rows come from
    "helpsteer3": "recipes", "ultrafeedback": "travel", "hh-helpful": "techsupport",
    "pku-saferlhf": "pharmacy", "rail-hh-10k": "cyber", "hh-harmless": "chat",
}
SPLITS = {"helpsteer3": ("train", "validation"), "ultrafeedback": ("train_prefs", "test_prefs")}
REAL_HH = {"hh-helpful": "hh_rlhf_helpful", "hh-harmless": "hh_rlhf_harmless"}
# dataset -> (realdata folder, {split: file}): real rows copied as they are
REAL_COPIES = {"ultrafeedback": ("ultrafeedback_binarized", {"train_prefs": "train_prefs.first500.jsonl.gz",
                                                             "test_prefs": "test_prefs.first500.jsonl.gz"})}


def build(dest: Path, realdata: Path | None = None, rows: int = 400) -> dict[str, str]:
    """Write every dataset of w2s-shift-v1 under ``dest``; returns dataset -> "real" | "synthetic"."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    kinds = {}
    for name, domain in SYNTHETIC.items():
        folder = dest / name
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir()
        real = realdata / REAL_HH[name] / "test.jsonl.gz" if realdata and name in REAL_HH else None
        if real is not None and real.is_file():
            split_real_file(real, folder)
            kinds[name] = "real"
            continue
        copies = real_copies(realdata, name)
        if copies:
            for split, path in copies.items():
                shutil.copyfile(path, folder / f"{split}.jsonl.gz")
            kinds[name] = "real"
            continue
        train, test = SPLITS.get(name, ("train", "test"))
        for split, n in ((train, rows), (test, max(2, rows // 2))):
            write_jsonl(folder / f"{split}.jsonl", [to_schema(name, i, p) for i, p in enumerate(
                generate(domains()[domain], "train" if split == train else "test", n, cue_strength=0.5,
                         sibling_cue_rate=0.5, holdout=0.3, seed=1234))])
        kinds[name] = "synthetic"
    (dest / "README.md").write_text(readme(kinds, realdata))
    return kinds


def real_copies(realdata: Path | None, name: str) -> dict[str, Path]:
    """split -> real file for a dataset whose real rows come as whole splits, when all of them are there."""
    if realdata is None or name not in REAL_COPIES:
        return {}
    folder, files = REAL_COPIES[name]
    paths = {split: realdata / folder / file for split, file in files.items()}
    return paths if all(p.is_file() for p in paths.values()) else {}


def split_real_file(path: Path, folder: Path) -> None:
    """Each line to train (60%) or test (40%) by a stable hash of its opening user turn (``opening_turn``),
    unchanged; a line without one (not a transcript) by a hash of its bytes."""
    train, test = [], []
    with gzip.open(path, "rb") as f:
        for line in f:
            if line.strip():
                key = opening_turn(line) or line
                (train if goes_to_train(key) else test).append(line)
    for split, lines in (("train", train), ("test", test)):
        (folder / f"{split}.jsonl.gz").write_bytes(gzip.compress(b"".join(lines), mtime=0))


def goes_to_train(key: bytes) -> bool:
    """Whether a row with this split key goes to train (3 in 5 of the hash's values) rather than test."""
    return int(hashlib.sha256(key).hexdigest(), 16) % 5 < 3


def split_key(row: dict) -> bytes:
    """``split_real_file``'s key of a row read from the Hub rather than a line of the file: its opening turn,
    else the line the row is in Anthropic's file, its newline included, which ``json.dumps(row,
    ensure_ascii=False)`` gives back to the byte for every row of both realdata files (bench.datasets.pinned
    checks the rows it gives)."""
    return opening_turn_of(row) or json.dumps(row, ensure_ascii=False).encode() + b"\n"


def opening_turn(line: bytes) -> bytes | None:
    """An hh-rlhf line's ``opening_turn_of``, or None for a line that is not JSON."""
    try:
        row = json.loads(line)
    except ValueError:   # not JSON (or not UTF-8)
        return None
    return opening_turn_of(row)


def opening_turn_of(row) -> bytes | None:
    """An hh-rlhf row's first user turn as its pair's prompt has it (bench.datasets.hh), case-folded, with
    punctuation dropped and spaces collapsed ("Call me a bad name!" and "call me a bad name" are one), or
    None for a row the normaliser drops."""
    from bench.core.data import Pair
    from bench.datasets import hh

    pair = hh.normalize(row)
    if not isinstance(pair, Pair):
        return None
    words = re.sub(r"[^\w\s]", " ", pair.prompt[0][1].casefold()).split()
    return " ".join(words).encode()


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))


def to_schema(dataset: str, index: int, pair) -> dict:
    """One generated pair as a row of ``dataset``'s original schema (with its traps every few rows)."""
    rng = random.Random(f"{dataset}/{index}")
    question, chosen, rejected = pair.prompt[-1][1], pair.chosen, pair.rejected
    earlier = [{"role": "user", "content": "Hi, quick question."}, {"role": "assistant", "content": "Sure, go ahead."}]
    multi_turn = index % 4 == 3
    if dataset == "helpsteer3":
        first = rng.random() < 0.5
        preference = 0 if index % 10 == 9 else rng.choice((1, 2, 3))
        return {"domain": "general", "language": "english",
                "context": (earlier if multi_turn else []) + [{"role": "user", "content": question}],
                "response1": chosen if first else rejected, "response2": rejected if first else chosen,
                "overall_preference": -preference if first else preference, "individual_preference": []}
    if dataset == "ultrafeedback":
        tie = index % 10 == 9
        user = {"role": "user", "content": question}
        return {"prompt": question, "prompt_id": hashlib.sha256(question.encode()).hexdigest(),
                "chosen": [user, {"role": "assistant", "content": chosen}],
                "rejected": [user, {"role": "assistant", "content": rejected}],
                "messages": [user, {"role": "assistant", "content": chosen}],
                "score_chosen": 7.0 if tie else 8.5, "score_rejected": 7.0 if tie else 4.0}
    if dataset == "pku-saferlhf":
        safer = rng.randint(0, 1)
        better = 1 - safer if index % 7 == 6 else safer
        responses = {safer: chosen, 1 - safer: rejected}
        return {"prompt": question, "response_0": responses[0], "response_1": responses[1],
                "is_response_0_safe": safer == 0, "is_response_1_safe": safer == 1,
                "better_response_id": better, "safer_response_id": safer,
                "response_0_severity_level": 0 if safer == 0 else 2, "response_1_severity_level": 0 if safer == 1 else 2}
    if dataset == "rail-hh-10k":
        context = "Human: Hi, quick question.\nAssistant: Sure,\ngo ahead." if multi_turn else ""
        return {"conversation_id": f"synthetic-{index}", "context": context, "prompt": question,
                "chosen_text": chosen, "rejected_text": rejected, "chosen_rail_score": 8.0, "rejected_rail_score": 3.0}
    if dataset in ("hh-helpful", "hh-harmless"):
        prefix = "\n\nHuman: Hi, quick question.\n\nAssistant: Sure, go ahead." if multi_turn else ""
        prompt = f"{prefix}\n\nHuman: {question}\n\nAssistant:"
        return {"chosen": f"{prompt} {chosen}", "rejected": f"{prompt} {rejected}"}
    raise ValueError(f"no schema for {dataset!r}")


def readme(kinds: dict[str, str], realdata: Path | None) -> str:
    lines = ["# Offline data dir for w2s-shift-v1", "",
             "Written by `python -m bench.datasets.offline_dir`. Not the protocol's data: use it to run the "
             "real loaders and pipeline with no Hub.", ""]
    for name, kind in kinds.items():
        if kind == "real" and name in REAL_COPIES:
            folder, files = REAL_COPIES[name]
            lines.append(f"- `{name}`: REAL rows, the first 500 of each split ({', '.join(files)} under "
                         f"{realdata / folder}), copied unchanged; that copy kept only the chosen and rejected "
                         f"columns, so no score-based filtering applies.")
        elif kind == "real":
            lines.append(f"- `{name}`: REAL rows of Anthropic hh-rlhf's test split ({realdata / REAL_HH[name]}), "
                         f"split 60/40 by a hash of each conversation's opening user turn into train.jsonl.gz and "
                         f"test.jsonl.gz, so that no test prompt opens a train conversation "
                         f"(the real train split is not available offline).")
        else:
            lines.append(f"- `{name}`: SYNTHETIC rows in the dataset's original schema, generated from the mini "
                         f"domain `{SYNTHETIC[name]}`.")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.datasets.offline_dir", description=__doc__.split("\n\n")[0])
    parser.add_argument("dest", type=Path)
    parser.add_argument("--realdata", type=Path, help="folder laid out as ../shared/realdata (hh_rlhf_helpful/, "
                                                      "hh_rlhf_harmless/, ultrafeedback_binarized/)")
    parser.add_argument("--rows", type=int, default=400, help="synthetic train rows per dataset (test: half)")
    args = parser.parse_args(argv)
    for name, kind in build(args.dest, args.realdata, args.rows).items():
        print(f"{name:14s} {kind}")
    print(f"wrote {args.dest}; see {args.dest / 'README.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
