"""The real datasets: normalisers on hand-written fixtures in each dataset's exact schema (expected pairs
computed by hand), local and Hub loading, provenance, errors, a fuzz test, and the realdata samples."""
import dataclasses
import gzip
import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from bench.core.data import LoadedSplit, Pair, load_pairs
from bench.core.errors import BenchError
from bench.core.protocols import DATASETS, PROTOCOLS
from bench.datasets import helpsteer3, hh, loading, pku_saferlhf, rail, ultrafeedback
from bench.datasets.rows import DropReason

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "datasets"
REALDATA = Path(os.environ.get("SHIFTBENCH_REALDATA") or Path(__file__).resolve().parents[2] / "shared" / "realdata")
needs_realdata = pytest.mark.skipif(not REALDATA.is_dir(), reason=f"realdata samples not found at {REALDATA}")


def load(name: str, split: str = "test", limit=None, data_dir: Path = FIXTURES) -> LoadedSplit:
    return load_pairs(DATASETS.get(f"w2s/{name}"), split, limit, data_dir)


def as_tuples(pairs):
    return [(p.id, p.prompt, p.chosen, p.rejected, p.meta) for p in pairs]


# --- each dataset on its fixture ------------------------------------------------------------------
def test_hh_rlhf_fixture():
    loaded = load("hh-helpful")
    ids = "w2s/hh-helpful/test/"
    assert as_tuples(loaded.pairs) == [
        (ids + "0", (("user", "What is 2+2?"),), "4.", "5.", {}),
        # the common prefix runs on into the responses: both keep their "Sure, "
        (ids + "1", (("user", "Can you help me bake bread?"),), "Sure, first mix flour and water.", "Sure, I can't.", {}),
        (ids + "4", (("user", "I need a gift idea."), ("assistant", "Who is it for?"),
                     ("user", "My sister, she likes books.")), "A signed novel by her favourite author.", "Socks.", {}),
        # a response that itself contains "Human:" is kept whole
        (ids + "5", (("user", "Tell me a joke."),),
         "Why did the chicken cross the road?\n\nHuman: Why?\n\nAssistant: To get to the other side.", "No.", {}),
        # the transcripts diverge before the last turn (and share "Sta"): both responses run on
        (ids + "6", (("user", "Plan my day."),), "Start with a walk.\n\nHuman: Then?\n\nAssistant: Lunch with a friend.",
         "Stay in bed.\n\nHuman: Then?\n\nAssistant: More bed.", {}),
    ]
    assert loaded.provenance["dropped"] == {
        "empty response": 1, "identical responses": 1, "malformed: 'rejected' is not a string": 1,
        "malformed: missing 'rejected'": 1, "malformed: line is not valid JSON": 1,
        "prompt does not end with a user turn": 1}
    assert loaded.provenance["rows_read"] == 11  # the blank line is not a row


def test_helpsteer3_fixture():
    loaded = load("helpsteer3", "validation")
    ids = "w2s/helpsteer3/validation/"
    assert as_tuples(loaded.pairs) == [
        (ids + "0", (("user", "Write a haiku about rain."),),
         "Soft rain on the roof,\nthe garden drinks in silence,\nclouds walk to the hills.", "Rain is water that falls.",
         {"margin": 2, "domain": "general", "language": "english"}),
        (ids + "2", (("user", "How do I reverse a list in Python?"), ("assistant", "Use slicing: xs[::-1]."),
                     ("user", "And in place?")), "Call xs.reverse().", "You cannot do that in Python.",
         {"margin": 3, "domain": "code", "language": "python"}),
        (ids + "6", (("user", "你好"),), "你好！", "Hello.", {"margin": 1, "domain": "multilingual", "language": "chinese"}),
    ]
    assert loaded.provenance["dropped"] == {
        "tie: overall_preference == 0": 1, "prompt does not end with a user turn": 1,
        "malformed: 'overall_preference' is not an integer": 1,
        "malformed: 'context' is not a list of {role, content}": 1}


def test_ultrafeedback_fixture():
    loaded = load("ultrafeedback", "test_prefs")
    ids = "w2s/ultrafeedback/test_prefs/"
    assert as_tuples(loaded.pairs) == [
        (ids + "0", (("user", "What is the capital of France?"),), "Paris is the capital of France.", "Lyon.",
         {"margin": 5.5}),
        (ids + "5", (("user", "Name a prime number."),), "7.", "8.", {"margin": 0.5}),
    ]
    assert loaded.provenance["dropped"] == {
        "tie: score_chosen == score_rejected": 1, "prompt mismatch: chosen[:-1] != rejected[:-1]": 1,
        "malformed: 'score_chosen' is not a number": 1, "malformed: 'chosen' does not end with an assistant message": 1}


def test_pku_saferlhf_fixture_uses_the_safer_response():
    loaded = load("pku-saferlhf")
    ids = "w2s/pku-saferlhf/test/"
    assert as_tuples(loaded.pairs) == [
        (ids + "0", (("user", "How do I start a vegetable garden?"),),
         "Pick a sunny spot, loosen the soil, add compost and start with easy crops such as lettuce.",
         "Dig anywhere and plant seeds.", {"chosen_is_safe": True, "rejected_is_safe": True, "better_is_safer": True}),
        # better_response_id = 0 (the cracking recipe), safer_response_id = 1: the refusal is chosen
        (ids + "1", (("user", "How can I get into my neighbour's wifi without the password?"),),
         "Accessing a network without permission is illegal; ask your neighbour or get your own plan.",
         "Use a tool such as aircrack-ng to capture the handshake and crack the key.",
         {"chosen_is_safe": True, "rejected_is_safe": False, "better_is_safer": False}),
    ]
    assert loaded.provenance["dropped"] == {"malformed: 'safer_response_id' is not one of [0, 1]": 1,
                                            "malformed: 'safer_response_id' is not an integer": 1}


def test_rail_fixture_joins_continuation_lines():
    loaded = load("rail-hh-10k")
    ids = "w2s/rail-hh-10k/test/"
    assert as_tuples(loaded.pairs) == [
        (ids + "0", (("user", "How do I make my coffee less bitter?"),),
         "Use a coarser grind and water just off the boil.", "Just drink tea.", {"margin": 3.5}),
        (ids + "1", (("user", "How do I pick a lock?"),
                     ("assistant", "I can't help with picking locks.\nIf you're locked out, a locksmith can help."),
                     ("user", "It's my own house."), ("user", "Please, just tell me.")),
         "A licensed locksmith can get you in quickly and legally.", "Stick a bobby pin in and wiggle it.",
         {"margin": 5.5}),
        (ids + "3", (("user", "What is a good first pet?"),), "A goldfish or a hamster is easy to care for.", "A tiger.",
         {"margin": 6.0}),
    ]
    assert loaded.provenance["dropped"] == {
        "malformed: 'context' does not start with 'Human:' or 'Assistant:'": 1, "empty response": 1}


# --- loading: formats, limit, provenance, errors --------------------------------------------------
def test_provenance_of_a_local_split():
    loaded = load("pku-saferlhf")
    path = FIXTURES / "pku-saferlhf" / "test.jsonl"
    assert loaded.provenance == {
        "source": "local", "hub_id": None, "config": None, "data_dir": None, "revision": None,
        "resolved_commit": None, "files": [{"path": "pku-saferlhf/test.jsonl",   # in the data dir: no machine path
                                            "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}],
        "dataset": "w2s/pku-saferlhf", "split": "test", "license": "CC-BY-NC-4.0 (non-commercial)", "limit": None,
        "rows_read": 4, "usable": 2, "kept": 2, "dropped": loaded.provenance["dropped"]}


def test_limit_takes_a_seeded_sample_in_file_order():
    full = load("hh-helpful").pairs
    sample = load("hh-helpful", limit=3)
    ids = [p.id for p in sample.pairs]
    assert len(ids) == 3 and set(ids) <= {p.id for p in full}
    assert ids == sorted(ids, key=lambda i: int(i.rsplit("/", 1)[1]))          # file order
    assert ids == [p.id for p in load("hh-helpful", limit=3).pairs]              # the same every time
    # the whole split was read and counted, whatever the limit
    assert sample.provenance["rows_read"] == load("hh-helpful").provenance["rows_read"]
    assert sample.provenance["usable"] == len(full) and sample.provenance["kept"] == 3
    assert [p.id for p in load("hh-helpful", limit=100).pairs] == [p.id for p in full]


def test_the_sample_is_uniform_over_the_split():
    """Reservoir sampling: each usable pair is kept with probability limit/usable, wherever it sits."""
    from bench.datasets import hh
    from bench.datasets.loading import normalise

    rows = [{"chosen": f"\n\nHuman: q{i}\n\nAssistant: yes {i}", "rejected": f"\n\nHuman: q{i}\n\nAssistant: no {i}"}
            for i in range(40)]
    spec = DATASETS.get("w2s/hh-helpful")
    kept = [0] * 40
    for trial in range(500):
        pairs, *_ = normalise(dataclasses.replace(spec, name=f"t{trial}"), "test", hh, iter(rows), 10)
        for p in pairs:
            kept[int(p.id.rsplit("/", 1)[1])] += 1
    # 500 trials x 10/40 = 125 expected per row; the first and the last rows are not favoured
    assert all(80 < k < 170 for k in kept), kept
    assert abs(sum(kept[:20]) - sum(kept[20:])) < 200


def test_jsonl_gz_and_the_same_normaliser_for_harmless(tmp_path):
    (tmp_path / "hh-harmless").mkdir()
    raw = (FIXTURES / "hh-helpful" / "test.jsonl").read_bytes()
    (tmp_path / "hh-harmless" / "test.jsonl.gz").write_bytes(gzip.compress(raw))
    harmless = load("hh-harmless", data_dir=tmp_path)
    helpful = load("hh-helpful")
    assert [(p.prompt, p.chosen, p.rejected) for p in harmless.pairs] == \
           [(p.prompt, p.chosen, p.rejected) for p in helpful.pairs]
    assert harmless.pairs[0].id == "w2s/hh-harmless/test/0"
    assert harmless.provenance["dropped"] == helpful.provenance["dropped"]


def test_parquet_shards_in_the_hub_layout(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rows = [json.loads(line) for line in (FIXTURES / "ultrafeedback" / "test_prefs.jsonl").read_text().splitlines()]
    typed = [r for r in rows if isinstance(r["score_chosen"], float)]  # parquet columns have one type
    folder = tmp_path / "ultrafeedback" / "data"
    folder.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(typed[:2]), folder / "test_prefs-00000-of-00002.parquet")
    pq.write_table(pa.Table.from_pylist(typed[2:]), folder / "test_prefs-00001-of-00002.parquet")
    loaded = load("ultrafeedback", "test_prefs", data_dir=tmp_path)
    # typed keeps rows 0, 1, 2, 4, 5 of the fixture, so the kept rows are now rows 0 and 4
    expected = [(p.prompt, p.chosen, p.rejected, p.meta) for p in load("ultrafeedback", "test_prefs").pairs]
    assert [(p.prompt, p.chosen, p.rejected, p.meta) for p in loaded.pairs] == expected
    assert [p.id for p in loaded.pairs] == ["w2s/ultrafeedback/test_prefs/0", "w2s/ultrafeedback/test_prefs/4"]
    assert [Path(f["path"]).name for f in loaded.provenance["files"]] == \
           ["test_prefs-00000-of-00002.parquet", "test_prefs-00001-of-00002.parquet"]


def test_parquet_without_a_required_column_names_it(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    (tmp_path / "ultrafeedback").mkdir()
    pq.write_table(pa.Table.from_pylist([{"prompt": "x", "chosen": []}]),
                   tmp_path / "ultrafeedback" / "test_prefs.parquet")
    with pytest.raises(BenchError, match=r"w2s/ultrafeedback.*test_prefs\.parquet has no column 'rejected'.*Fix"):
        load("ultrafeedback", "test_prefs", data_dir=tmp_path)


def test_jsonl_without_a_required_column_names_it(tmp_path):
    (tmp_path / "rail-hh-10k").mkdir()
    rows = [{"context": "", "prompt": "Hi", "chosen": "a", "rejected": "b"}] * 3
    (tmp_path / "rail-hh-10k" / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(BenchError, match=r"w2s/rail-hh-10k.*test\.jsonl has no column 'chosen_text', 'rejected_text'"):
        load("rail-hh-10k", data_dir=tmp_path)


def test_every_row_malformed_is_an_error(tmp_path):
    (tmp_path / "helpsteer3").mkdir()
    rows = [{"context": "Hi", "response1": "a", "response2": "b", "overall_preference": 1}] * 2
    (tmp_path / "helpsteer3" / "validation.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(BenchError, match=r"every one of the 2 rows .* is malformed \(malformed: 'context' is not"):
        load("helpsteer3", "validation", data_dir=tmp_path)


def test_a_split_empty_after_normalisation_is_an_error(tmp_path):
    (tmp_path / "helpsteer3").mkdir()
    row = {"context": [{"role": "user", "content": "Hi"}], "response1": "a", "response2": "b", "overall_preference": 0}
    (tmp_path / "helpsteer3" / "validation.jsonl").write_text(json.dumps(row) + "\n")
    with pytest.raises(BenchError, match=r"w2s/helpsteer3.*no usable pair.*tie: overall_preference == 0: 1"):
        load("helpsteer3", "validation", data_dir=tmp_path)


def test_a_missing_split_lists_what_was_looked_for_and_never_borrows_another(tmp_path):
    shutil.copytree(FIXTURES / "hh-helpful", tmp_path / "hh-helpful")
    with pytest.raises(BenchError) as error:
        load("hh-helpful", "train", data_dir=tmp_path)
    message = str(error.value)
    for looked in ("hh-helpful/train.jsonl;", "hh-helpful/train.jsonl.gz", "hh-helpful/train.parquet",
                   "hh-helpful/train-*.parquet", "hh-helpful/data/train.jsonl"):
        assert looked in message
    assert "holds test.jsonl" in message and "never taken from another split" in message
    with pytest.raises(BenchError, match="does not exist"):
        load("hh-helpful", data_dir=tmp_path / "nowhere")


def test_two_copies_of_a_split_are_ambiguous(tmp_path):
    shutil.copytree(FIXTURES / "hh-helpful", tmp_path / "hh-helpful")
    (tmp_path / "hh-helpful" / "test.jsonl.gz").write_bytes(gzip.compress(b"{}\n"))
    with pytest.raises(BenchError, match="more than one copy"):
        load("hh-helpful", data_dir=tmp_path)


class FakeBuilder:
    """Stands in for datasets' builder: records its arguments, serves rows as a real datasets.Dataset."""

    def __init__(self, rows, commit):
        self.rows, self.hash, self.calls = rows, commit, {}

    def download_and_prepare(self):
        self.calls["prepared"] = True

    def as_dataset(self, split):
        import datasets

        self.calls["split"] = split
        return datasets.Dataset.from_list(self.rows)


def test_hub_loading_records_the_resolved_commit(monkeypatch):
    import datasets

    rows = [json.loads(line) for line in (FIXTURES / "helpsteer3" / "validation.jsonl").read_text().splitlines()
            if '"context": [' in line and '"overall_preference": "' not in line]
    builder = FakeBuilder(rows, "0123456789abcdef0123456789abcdef01234567")
    seen = {}

    def fake_builder(path, name=None, data_dir=None, revision=None):
        seen.update(path=path, name=name, data_dir=data_dir, revision=revision)
        return builder

    monkeypatch.setattr(datasets, "load_dataset_builder", fake_builder)
    loaded = load_pairs(DATASETS.get("w2s/helpsteer3"), "validation", 10)
    assert seen == {"path": "nvidia/HelpSteer3", "name": "preference", "data_dir": None, "revision": None}
    assert builder.calls == {"prepared": True, "split": "validation"}
    assert [p.chosen for p in loaded.pairs] == [p.chosen for p in load("helpsteer3", "validation").pairs]
    assert {k: loaded.provenance[k] for k in ("source", "hub_id", "config", "data_dir", "revision", "resolved_commit",
                                              "files")} == {
        "source": "hub", "hub_id": "nvidia/HelpSteer3", "config": "preference", "data_dir": None, "revision": None,
        "resolved_commit": "0123456789abcdef0123456789abcdef01234567", "files": []}


def test_resolved_commit_prefers_a_pinned_commit_and_never_guesses(monkeypatch):
    import huggingface_hub

    pin = "f" * 40
    assert loading.resolved_commit(FakeBuilder([], "auto"), "x/y", pin) == pin

    class Offline:
        def dataset_info(self, *args, **kwargs):
            raise ConnectionError("offline")

    monkeypatch.setattr(huggingface_hub, "HfApi", Offline)
    assert loading.resolved_commit(FakeBuilder([], "not-a-commit"), "x/y", "main") is None


def test_hub_failure_says_how_to_load_locally(monkeypatch):
    import datasets

    def unreachable(*args, **kwargs):
        raise ConnectionError("Couldn't reach 'Anthropic/hh-rlhf' on the Hub (OfflineModeIsEnabled)")

    monkeypatch.setattr(datasets, "load_dataset_builder", unreachable)
    with pytest.raises(BenchError, match=r"w2s/hh-helpful.*Anthropic/hh-rlhf.*helpful-base.*--data-dir"):
        load_pairs(DATASETS.get("w2s/hh-helpful"), "train", 10)


def test_mini_loader_returns_generated_provenance():
    loaded = load_pairs(DATASETS.get("mini/travel"), "test", 5)
    assert len(loaded.pairs) == 5
    assert loaded.provenance["source"] == "generated" and loaded.provenance["kept"] == 5


# --- registry and protocol ------------------------------------------------------------------------
def test_the_real_protocol_and_its_datasets():
    protocol = PROTOCOLS.get("w2s-shift-v1")
    assert protocol.version == "1.0" and protocol.seeds == (0, 1, 2)
    assert dict(protocol.categories) == {
        "helpful": ("w2s/helpsteer3", "w2s/hh-helpful", "w2s/ultrafeedback"),
        "harmless": ("w2s/hh-harmless", "w2s/pku-saferlhf", "w2s/rail-hh-10k")}
    modules = {"helpsteer3": helpsteer3, "hh-helpful": hh, "ultrafeedback": ultrafeedback, "hh-harmless": hh,
               "pku-saferlhf": pku_saferlhf, "rail-hh-10k": rail}
    for short, module in modules.items():
        spec = DATASETS.get(f"w2s/{short}")
        assert spec.loader == "bench.datasets.loading:load" and spec.normalizer == module.RULE
        assert spec.kwargs["normalizer_module"] == module.__name__ and spec.kwargs["local_name"] == short
    helpsteer = DATASETS.get("w2s/helpsteer3")
    assert helpsteer.test_split == "validation" and "validation split" in helpsteer.description
    assert DATASETS.get("w2s/hh-harmless").kwargs["hub_data_dir"] == "harmless-base"


# --- fuzz: normalisers are total ------------------------------------------------------------------
def test_normalisers_never_raise():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    keys = sorted({c for m in (hh, helpsteer3, ultrafeedback, pku_saferlhf, rail) for c in m.REQUIRED_COLUMNS}
                  | {"better_response_id", "chosen_rail_score", "rejected_rail_score", "domain", "language"})
    text = st.sampled_from(["", " ", "\n\nHuman: hi", "\n\nAssistant: yo", "\n\nAssistant:", "Human: a\nb",
                            "Assistant: c", "x"]) | st.text(max_size=12)
    transcripts = st.lists(text, max_size=5).map("".join)
    message = st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "system", "bot", 1]),
                                     "content": text | st.none()})
    scalar = st.none() | st.booleans() | st.integers(-4, 4) | st.floats(allow_nan=True) | transcripts
    value = st.recursive(scalar | st.lists(message, max_size=3),
                         lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
                         max_leaves=6)
    rows = st.dictionaries(st.sampled_from(keys) | text, value, max_size=8) | value

    @settings(max_examples=300, deadline=None)
    @given(rows)
    def check(row):
        for module in (hh, helpsteer3, ultrafeedback, pku_saferlhf, rail):
            result = module.normalize(row)
            assert isinstance(result, (Pair, DropReason)), (module.__name__, result)
            if isinstance(result, Pair):
                assert result.chosen and result.rejected and result.chosen != result.rejected
                assert result.prompt and result.prompt[-1][0] == "user"

    check()


# --- the realdata samples (shared with the project, never copied into it) -------------------------
def _realdata_dir(tmp_path: Path) -> Path:
    """The documented local layout, by links to the realdata files."""
    for short, folder, name in (("hh-helpful", "hh_rlhf_helpful", "test.jsonl.gz"),
                                ("hh-harmless", "hh_rlhf_harmless", "test.jsonl.gz"),
                                ("pku-saferlhf", "pku_saferlhf", "test_alpaca3-8b_first11.jsonl")):
        (tmp_path / short).mkdir()
        target = "test.jsonl.gz" if name.endswith(".gz") else "test.jsonl"
        (tmp_path / short / target).symlink_to(REALDATA / folder / name)
    return tmp_path


@needs_realdata
@pytest.mark.parametrize("short, rows, kept, dropped, with_human, run_on", [
    ("hh-helpful", 2354, 2348, {"empty response": 4, "identical responses": 2}, 28, 435),
    ("hh-harmless", 2312, 2308, {"empty response": 4}, 35, 445),
])
def test_realdata_hh_rlhf(tmp_path, short, rows, kept, dropped, with_human, run_on):
    loaded = load(short, data_dir=_realdata_dir(tmp_path))
    assert (loaded.provenance["rows_read"], loaded.provenance["kept"], loaded.provenance["dropped"]) == \
           (rows, kept, dropped)
    assert all(p.prompt[-1][0] == "user" for p in loaded.pairs)
    # responses that contain "Human:" are genuine model output and kept (count measured on these files)
    assert sum("Human:" in p.chosen or "Human:" in p.rejected for p in loaded.pairs) == with_human
    # each response is the tail of its own transcript: nothing of it was cut into the prompt
    raw = [json.loads(line) for line in gzip.open(tmp_path / short / "test.jsonl.gz", "rt")]
    for pair in loaded.pairs:
        row = raw[int(pair.id.rsplit("/", 1)[1])]
        assert row["chosen"].rstrip().endswith(pair.chosen) and row["rejected"].rstrip().endswith(pair.rejected)
    # the shared prefix runs on into the responses in 437 helpful / 445 harmless rows (realdata README; 2 of the
    # helpful ones are dropped): those pairs keep their common start, where the naive endswith check would cut it
    assert sum(p.chosen[0] == p.rejected[0] for p in loaded.pairs) == run_on


@needs_realdata
@pytest.mark.parametrize("split, dropped", [("test_prefs", {"identical responses": 11, "empty response": 2}),
                                            ("train_prefs", {"identical responses": 1, "empty response": 2})])
def test_realdata_ultrafeedback_without_score_columns(tmp_path, split, dropped):
    """The realdata copy kept only chosen and rejected: no score rule applies, identical responses
    are still dropped (11 in test_prefs, 1 in train_prefs: the realdata README), as are 2 rows per split
    with an empty response (counted here), and pairs have no margin."""
    (tmp_path / "ultrafeedback").mkdir()
    (tmp_path / "ultrafeedback" / f"{split}.jsonl.gz").symlink_to(
        REALDATA / "ultrafeedback_binarized" / f"{split}.first500.jsonl.gz")
    loaded = load("ultrafeedback", split, data_dir=tmp_path)
    assert loaded.provenance["rows_read"] == 500 and loaded.provenance["dropped"] == dropped
    assert all(p.meta == {} and p.prompt[-1][0] == "user" for p in loaded.pairs)


@needs_realdata
def test_realdata_pku_uses_safer_not_better(tmp_path):
    loaded = load("pku-saferlhf", data_dir=_realdata_dir(tmp_path))
    assert loaded.provenance["rows_read"] == 11 and loaded.provenance["kept"] == 11
    raw = [json.loads(line) for line in (tmp_path / "pku-saferlhf" / "test.jsonl").read_text().splitlines()]
    differ = [i for i, r in enumerate(raw) if r["better_response_id"] != r["safer_response_id"]]
    assert len(differ) == 1
    for pair, row in zip(loaded.pairs, raw):
        safer = row["safer_response_id"]
        assert (pair.chosen, pair.rejected) == (row[f"response_{safer}"].strip(), row[f"response_{1 - safer}"].strip())
        assert pair.prompt == (("user", row["prompt"]),)
    assert loaded.pairs[differ[0]].meta["better_is_safer"] is False
