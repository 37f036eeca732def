"""The real protocol w2s-shift-v1 end to end offline: a local data dir (real hh-rlhf rows when
../shared/realdata is there, schema-exact stand-ins otherwise), capped sizes, provenance in results."""
import os
from pathlib import Path

import pytest

from bench.cli import main
from bench.core.protocols import PROTOCOLS, protocol_hash
from bench.core.result_schema import RESULT_FILE
from bench.core.results import recompute_folder
from bench.core.settings import RunSettings
from bench.datasets.offline_dir import build
from bench.stages import pipeline

REALDATA = Path(os.environ.get("SHIFTBENCH_REALDATA", Path(__file__).resolve().parents[2] / "shared" / "realdata"))


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    dest = tmp_path_factory.mktemp("data")
    kinds = build(dest, REALDATA if REALDATA.is_dir() else None, rows=40)
    assert set(kinds) == {"helpsteer3", "ultrafeedback", "hh-helpful", "pku-saferlhf", "rail-hh-10k", "hh-harmless"}
    return dest


def test_capped_protocol_is_named_and_hashed_apart():
    full = PROTOCOLS.get("w2s-shift-v1")
    capped = full.capped(200, 100)
    assert (capped.train_pool_size, capped.test_size) == (200, 100)
    assert capped.name == "w2s-shift-v1+cap-train200-test100" and protocol_hash(capped) != protocol_hash(full)
    assert full.capped(None, None) is full and full.capped(10**9, 10**9) is full
    short = full.capped(200, 100, 256)   # shorter sequences: named and hashed apart too, the name says the length
    assert short.name == "w2s-shift-v1+cap-train200-test100-len256" and short.max_length == 256
    assert protocol_hash(short) not in (protocol_hash(full), protocol_hash(capped))
    assert full.capped(None, None, 10**6) is full and full.capped(None, None, 512).name == "w2s-shift-v1+cap-train8000-test1000-len512"


def test_cap_length_reaches_the_formatters_and_a_tiny_one_is_refused(tmp_path):
    from bench.cli import build_parser
    from bench.commands.settings import run_settings
    from bench.core.cache import Cache
    from bench.core.errors import BenchError
    from bench.stages.context import RunContext
    from bench.stages.pipeline import checked_method

    args = build_parser().parse_args(["run", "--method", "naive", "--protocol", "w2s-shift-v1", "--cap-length", "128"])
    settings = run_settings(args)
    ctx = RunContext(settings, checked_method(settings), Cache(tmp_path))
    assert settings.protocol.max_length == 128 and ctx.formatter("strong").provenance()["max_length"] == 128
    with pytest.raises(BenchError, match="--cap-length 8: give at least 32 tokens"):
        run_settings(build_parser().parse_args(["run", "--method", "naive", "--cap-length", "8"]))


def test_w2s_protocol_runs_offline_from_a_data_dir(data_dir, small_models, tmp_path):
    protocol = PROTOCOLS.get("w2s-shift-v1").capped(16, 8)
    [result] = pipeline.run(RunSettings(protocol, small_models, "anchor", {}, ["w2s/hh-helpful"], [0], tmp_path,
                            tmp_path / "cache", data_dir=data_dir))
    assert set(result.eval_sets) == {"w2s/hh-helpful", "w2s/helpsteer3", "w2s/ultrafeedback"}
    assert all(v.n_pairs == 8 for v in result.eval_sets.values())
    pool = result.datasets["train_pool"]
    assert pool["source"] == "local" and pool["kept"] == 16 and pool["usable"] >= 16
    assert all(len(f["sha256"]) == 64 for f in pool["files"])
    assert result.datasets["w2s/helpsteer3"]["dropped"]  # the generated ties were dropped and counted
    # MiniLM reads 512 positions: the 1024-token protocol is cut to that, and the result says so
    assert result.formatters["strong"]["max_length"] == 512
    assert recompute_folder(next(tmp_path.rglob(RESULT_FILE)).parent) == []


def test_real_hh_rows_are_in_the_data_dir_when_realdata_is_there(data_dir):
    if not REALDATA.is_dir():
        pytest.skip(f"no realdata folder at {REALDATA}")
    assert "REAL rows" in (data_dir / "README.md").read_text()
    from bench.core.data import load_pairs
    from bench.core.protocols import DATASETS

    spec = DATASETS.get("w2s/hh-helpful")
    train = load_pairs(spec, "train", None, data_dir).provenance
    test = load_pairs(spec, "test", None, data_dir).provenance
    assert train["rows_read"] + test["rows_read"] == 2354 and train["kept"] + test["kept"] == 2348
    # UltraFeedback's real rows, so that the helpful category has two real datasets
    spec = DATASETS.get("w2s/ultrafeedback")
    assert [load_pairs(spec, split, None, data_dir).provenance["kept"] for split in ("train_prefs", "test_prefs")] \
        == [497, 487]
    assert "first 500 of each split" in (data_dir / "README.md").read_text()


@pytest.mark.parametrize("extra, message", [
    (["--data-dir", "/nonexistent/dir"], "no such folder"),
    (["--cap-train", "1"], "at least 2 pairs"),
])
def test_bad_data_flags_fail_fast(extra, message, tmp_path, capsys):
    assert main(["run", "--method", "naive", "--protocol", "w2s-shift-v1", *extra, "--out", str(tmp_path)]) == 2
    assert message in capsys.readouterr().err


def test_a_missing_split_names_what_was_looked_for(data_dir, small_models, tmp_path, capsys):
    import shutil

    broken = tmp_path / "data"
    shutil.copytree(data_dir, broken)
    shutil.rmtree(broken / "rail-hh-10k")
    assert main(["run", "--method", "naive", "--protocol", "w2s-shift-v1", "--source", "rail-hh-10k",
                 "--data-dir", str(broken), "--cap-train", "8", "--cap-test", "4", "--out", str(tmp_path / "out"),
                 "--cache-dir", str(tmp_path / "cache")]) == 2
    err = capsys.readouterr().err
    assert "rail-hh-10k" in err and str(broken) in err


def test_bench_card_prints_the_protocol_card(capsys):
    assert main(["card", "w2s-shift-v1"]) == 0
    out = capsys.readouterr().out
    assert "validation split is the test split" in out and "reservoir sampling" in out
