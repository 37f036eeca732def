"""Bring your own student, on the shrunken protocol: the walk of docs/bring-your-own-student.md run
command by command as the page writes them (bench labels, TRL's RewardTrainer through
examples/trl_reward_model.py, bench evaluate, naive beside it, submit, validate, the board, bench
export read back with datasets), then what validation refuses in an external submission, and each
bad checkpoint refused with its problem named before anything is scored."""
import contextlib
import dataclasses
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from small_runs import as_folders, edit_json, first_cell, reseal

from bench.cli import main
from bench.core.io import sha256_file
from bench.core.result_schema import EXTERNAL_NOTE
from bench.core.results import load_cell

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "bring-your-own-student.md"
STUDENT = "trl-soft-bt_loss=soft"   # the results folder the doc's bench evaluate writes


def doc_commands() -> list[str]:
    """Every command of the doc's bash blocks, in order."""
    blocks = re.findall(r"```bash\n(.*?)```", DOC.read_text(), flags=re.S)
    return [line.strip() for block in blocks for line in block.splitlines() if line.strip()]


def on_small(argv: list[str], protocol, models) -> list[str]:
    """A doc command on the shrunken protocol: ``mini-v2`` and ``tiny-lr3e-4`` (as a token or a path part; ``mini`` and
    ``tiny`` too) become its names, and ``--seeds 0 1 2`` its seeds."""
    names = {"mini-v2": protocol.name, "tiny-lr3e-4": models.name, "mini": protocol.name, "tiny": models.name}
    out, skipping = [], False
    for token in argv:
        if skipping and token.isdigit():
            continue
        skipping = token == "--seeds"
        out.append("/".join(names.get(part, part) for part in token.split("/")))
        if skipping:
            out += [str(seed) for seed in protocol.seeds]
    return out


def bench(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@dataclasses.dataclass
class Walk:
    work: Path
    cache: Path   # the teacher cache the walk's commands used (the session's: $SHIFTBENCH_CACHE)
    protocol: object
    models: object
    ran: list[list[str]]
    outputs: dict[str, str]

    def cells(self):
        return [(seed, source) for seed in self.protocol.seeds for source in self.protocol.datasets]

    def labels(self, seed: int, source: str) -> Path:
        return self.work / "labels" / self.protocol.name / self.models.name / f"seed{seed}" / source.replace("/", "__")

    def student(self, seed: int, source: str) -> Path:
        return self.work / "students" / self.protocol.name / self.models.name / f"seed{seed}" / source.replace("/", "__")

    def results(self, slug: str) -> Path:
        return self.work / "results" / self.protocol.name / self.models.name / slug

    def submission(self, slug: str) -> Path:
        return self.work / "submissions" / self.protocol.name / self.models.name / slug


@pytest.fixture(scope="module")
def walk(tmp_path_factory, registered_small, session_cache):
    protocol, models = registered_small
    work = tmp_path_factory.mktemp("byo")
    ran, outputs = [], {}
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(work)
        mp.setenv("SHIFTBENCH_CACHE", str(session_cache))   # the doc's commands use the default cache: the session's
        for command in doc_commands():
            argv = on_small(shlex.split(command), protocol, models)
            if argv[0] == "hf":   # the Hub is not reachable from the tests
                assert argv[1:2] == ["upload"] and "--repo-type" in argv
                continue
            if argv[:2] == ["bench", "submit"]:   # the repository's naive reference submission, for this protocol
                code, _, err = bench("submit", str(Path("results", protocol.name, models.name, "naive")),
                                     "--submitter", "reference")
                assert code == 0, err
            if argv[0] == "python":
                done = subprocess.run([sys.executable, str(ROOT / argv[1]), *argv[2:]], cwd=work, capture_output=True,
                                      text=True, env={**os.environ, "SHIFTBENCH_CACHE": str(session_cache)})
                assert done.returncode == 0, done.stderr[-3000:]
                outputs[" ".join(argv[:2])] = done.stderr
            else:
                assert argv[0] == "bench", command
                code, out, err = bench(*argv[1:])
                assert code == 0, f"{command}\n{err[-3000:]}"
                outputs[" ".join(argv[:2])] = out
            ran.append(argv)
    return Walk(work, session_cache, protocol, models, ran, outputs)


def test_the_walk_of_the_doc_runs_every_step(walk):
    steps = [" ".join(argv[:2]) for argv in walk.ran]
    assert steps == ["bench labels", "python examples/trl_reward_model.py", "bench evaluate", "bench run",
                     "bench compare", "bench submit", "bench validate", "bench leaderboard", "bench export"]
    assert "trl-soft-bt" in walk.outputs["bench compare"] and "naive" in walk.outputs["bench compare"]


def test_labels_are_the_data_the_harness_student_learns_from(walk):
    from datasets import load_dataset, load_from_disk

    from bench.core.formatting import formatter_for
    from bench.core.label_digest import label_digest
    from bench.stages.labels import read_rows
    from bench.stages.models import load_tokenizer

    strong = formatter_for(walk.models.strong, load_tokenizer(walk.models.strong), walk.protocol.max_length)
    for seed, source in walk.cells():
        folder = walk.labels(seed, source)
        provenance = json.loads((folder / "provenance.json").read_text())
        rows = read_rows(folder)
        naive = load_cell(walk.results("naive") / f"seed{seed}" / source.replace("/", "__"))
        # the harness's naive student of this cell learned from exactly these rows
        assert provenance["digest"] == label_digest(rows) == naive.labels.digest
        assert len(rows) == provenance["pairs"] == naive.sizes["half_b"] == naive.labels.pairs
        assert provenance["teacher"]["cache_key"] == naive.teacher["cache_key"]
        assert provenance["cell"]["protocol"]["hash"] == naive.protocol.hash
        assert all(0.5 <= row["soft_label"] <= 1 for row in rows)
        table = load_from_disk(str(folder / "dataset"))
        assert table["pair_id"] == [row["pair_id"] for row in rows] and table["soft_label"] == [r["soft_label"] for r in rows]
        first = rows[0]
        encoded = strong.encode(tuple((m["role"], m["content"]) for m in first["prompt"]), first["chosen"][0]["content"])
        assert table[0]["chosen_ids"] == encoded.input_ids and table[0]["chosen_token_type_ids"] == encoded.token_type_ids
        assert provenance["digest"] in json.loads(table.info.description.split("Provenance: ", 1)[1])["digest"]
        assert load_dataset(str(folder), split="train")["pair_id"] == table["pair_id"]   # through the card's header
        assert "license: mit" in (folder / "README.md").read_text()


def test_evaluate_writes_external_cells_that_recompute(walk, monkeypatch):
    from bench.core.results import recompute_folder

    for seed, source in walk.cells():
        folder = walk.results(STUDENT) / f"seed{seed}" / source.replace("/", "__")
        cell = load_cell(folder)
        assert cell is not None and recompute_folder(folder) == []
        trained = json.loads((walk.student(seed, source) / "shiftbench_training.json").read_text())
        assert cell.external.note == EXTERNAL_NOTE and cell.method.origin == {"kind": "external"}
        assert cell.external.trained_on == cell.labels.digest == trained["plan"]["labels_digest"]
        assert cell.external.checkpoint["files"] == {"model.safetensors": sha256_file(
            walk.student(seed, source) / "model.safetensors")}
        assert cell.method.params == {"loss": "soft"} and trained["plan"]["loss"] == "soft"
        assert cell.formatters["strong"]["tokenizer_sha256"] == load_cell(
            walk.results("naive") / f"seed{seed}" / source.replace("/", "__")).formatters["strong"]["tokenizer_sha256"]
        # the same teacher as naive's, and a student TRL trained: its scores tell pairs apart
        assert cell.teacher["cache_key"] == load_cell(walk.results("naive") / f"seed{seed}" /
                                                      source.replace("/", "__")).teacher["cache_key"]
        assert cell.misfit.pairs == cell.sizes["half_b"] and trained["train_loss"] > 0
    monkeypatch.chdir(walk.work)
    monkeypatch.setenv("SHIFTBENCH_CACHE", str(walk.cache))
    code, _, err = bench(*walk.ran[2][1:])
    assert code == 0 and err.count("[skip]") == len(walk.cells()), err   # finished cells are not scored again


def test_external_row_validates_and_is_on_the_board_beside_naive(walk):
    from bench.submissions import is_external
    from leaderboard.core import load_board, ranking

    board = load_board(walk.work / "submissions")
    assert all(v.ok for v in board.validations), [list(map(str, v.errors)) for v in board.validations]
    external = {v.submission["method"]["name"]: is_external(v) for v in board.validations}
    assert external == {"trl-soft-bt": True, "naive": False}
    trl = next(v for v in board.validations if v.submission["method"]["name"] == "trl-soft-bt")
    assert trl.submission["external"] == EXTERNAL_NOTE and not trl.warnings
    assert {"trl-soft-bt", "naive"} <= set(ranking(board)["method"])
    assert "trl-soft-bt" in walk.outputs["bench leaderboard"] and "naive" in walk.outputs["bench leaderboard"]


def test_export_loads_with_datasets_and_the_card_recomputes_the_summary(walk, monkeypatch):
    from datasets import load_dataset

    export = next(walk.work / argv[3] for argv in walk.ran if argv[:2] == ["bench", "export"])
    meta = json.loads((walk.submission(STUDENT) / "submission.json").read_text())
    scores = load_dataset(str(export), split="train")   # the default config: the per-pair scores
    cells = [load_cell(walk.results(STUDENT) / f"seed{s}" / d.replace("/", "__")) for s, d in walk.cells()]
    assert len(scores) == sum(e.n_pairs for c in cells for e in c.eval_sets.values())
    summary = load_dataset(str(export), "summary", split="train")[0]
    assert summary["nts"] == pytest.approx(meta["summary"]["nts"], abs=1e-12)
    assert summary["external"] == EXTERNAL_NOTE
    assert len(load_dataset(str(export), "cells", split="train")) == meta["summary"]["cells"] * meta["summary"]["seeds"]
    card = (export / "README.md").read_text()
    assert "external training: scores recompute, training not reproduced" in card
    assert f"Protocol `{walk.protocol.name}`" in card and "MIT (generated by ShiftBench)" in card
    assert "hf upload" in card and "license: mit" in card
    code = re.findall(r"```python\n(.*?)```", card, flags=re.S)[0]
    monkeypatch.chdir(export)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(code, {})   # asserts its recomputed WRG, AOG and NTS equal the summary's
    assert f"'nts': {round(meta['summary']['nts'], 2)}" in printed.getvalue().replace("np.float64(", "").replace(")", "")


def test_the_label_digest_changes_with_every_field_and_the_order_of_the_rows():
    from bench.core.errors import BenchError
    from bench.core.hubcard import hub_license
    from bench.core.label_digest import label_digest

    rows = [{"pair_id": f"p{i}", "prompt": [{"role": "user", "content": f"question {i}"}],
             "chosen": [{"role": "assistant", "content": f"good {i}"}],
             "rejected": [{"role": "assistant", "content": f"bad {i}"}], "soft_label": 0.75} for i in range(3)]
    digest = label_digest(rows)
    assert label_digest(json.loads(json.dumps(rows))) == digest   # a JSON round trip keeps every float
    changed = [[{**rows[0], "soft_label": 0.7500000000000001}, *rows[1:]], [rows[1], rows[0], rows[2]],
               [{**rows[0], "chosen": rows[0]["rejected"], "rejected": rows[0]["chosen"]}, *rows[1:]],
               [{**rows[0], "prompt": [{"role": "user", "content": "question 9"}]}, *rows[1:]], rows[:2]]
    assert len({label_digest(r) for r in changed} | {digest}) == len(changed) + 1
    with pytest.raises(BenchError, match="expected one assistant message"):
        label_digest([{**rows[0], "chosen": "good 0"}])
    assert hub_license(["MIT (generated by ShiftBench)"] * 2) == "mit"
    assert hub_license(["CC-BY-4.0", "MIT"]) == "other" and hub_license(["unclear: MIT per the card"]) == "other"


def test_submit_names_bench_evaluate_for_missing_external_cells(walk, tmp_path):
    from bench.core.errors import BenchError
    from bench.submissions import submit

    results = tmp_path / "results"
    shutil.copytree(walk.results(STUDENT), results / STUDENT)
    seed, source = walk.cells()[-1]
    shutil.rmtree(results / STUDENT / f"seed{seed}" / source.replace("/", "__"))
    with pytest.raises(BenchError, match=rf"missing cells: seed {seed} {source}; train a student on each one's labels "
                                         r"\(bench labels\) and score it with bench evaluate --name trl-soft-bt"):
        submit([results], tmp_path / "out", "me")
    assert not (tmp_path / "out").exists()


# --- what validation refuses in an external submission -------------------------------------------------------
@pytest.fixture
def trl_copy(walk, tmp_path):
    root = tmp_path / "subs"
    as_folders(shutil.copytree(walk.work / "submissions", root))   # the layout whose cell files these tests edit
    return root, root / walk.protocol.name / walk.models.name / STUDENT


def _validate(root):
    from bench.submissions import validate_tree

    return {v.submission["slug"]: v for v in validate_tree(root)}


def test_validate_refuses_labels_that_are_not_the_cells(trl_copy):
    root, folder = trl_copy
    edit_json(first_cell(folder) / "result.json", lambda r: r["external"].update(trained_on="0" * 64))
    reseal(folder)
    errors = "\n".join(map(str, _validate(root)[STUDENT].errors))
    assert "external.trained_on" in errors and "another cell's data" in errors


def test_validate_refuses_an_external_cell_in_an_unmarked_submission(trl_copy):
    root, folder = trl_copy
    edit_json(folder / "submission.json", lambda s: s.pop("external"))
    errors = "\n".join(map(str, _validate(root)[STUDENT].errors))
    assert "trained outside the harness but the submission is not marked so" in errors


def test_validate_refuses_an_unmarked_method_origin(trl_copy):
    root, folder = trl_copy
    edit_json(first_cell(folder) / "result.json", lambda r: r["method"].update(origin={"kind": "built-in"}))
    reseal(folder)
    assert "method.origin.kind" in "\n".join(map(str, _validate(root)[STUDENT].errors))


def test_validate_warns_when_one_teacher_gives_two_label_digests(trl_copy):
    root, _ = trl_copy
    naive = root / Path(*trl_copy[1].relative_to(root).parts[:2]) / "naive"
    edit_json(first_cell(naive) / "result.json", lambda r: r["labels"].update(digest="f" * 64))
    reseal(naive)
    found = _validate(root)
    assert found["naive"].ok   # its own numbers still recompute
    assert any("record different labels" in str(w) for w in found[STUDENT].warnings)


# --- bad checkpoints, refused before any scoring -----------------------------------------------------------
def _save(folder: Path, model, tokenizer) -> Path:
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def trained(walk):
    """One cell's TRL student, loaded, to derive bad checkpoints from."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    seed, source = walk.cells()[0]
    folder = walk.student(seed, source)
    return AutoModelForSequenceClassification.from_pretrained(folder), AutoTokenizer.from_pretrained(folder)


def _evaluate(walk, tmp_path, student, *extra, cache=None):
    seed, source = walk.cells()[0]
    return bench("evaluate", "--name", "byo", "--protocol", walk.protocol.name, "--models", walk.models.name,
                 "--source", source, "--seeds", str(seed), "--labels", str(walk.work / "labels"),
                 "--out", str(tmp_path / "results"), "--cache-dir", str(cache or tmp_path / "cache"),
                 *(["--student", str(student)] if student else []), *extra)


def _two_labels(folder, model, tokenizer):
    import copy

    import torch

    two = copy.deepcopy(model)
    two.classifier = torch.nn.Linear(model.classifier.in_features, 2)
    two.config.num_labels = 2
    return _save(folder, two, tokenizer)


def _no_head(folder, model, tokenizer):
    from safetensors.torch import load_file, save_file

    _save(folder, model, tokenizer)
    weights = load_file(folder / "model.safetensors")
    save_file({k: v for k, v in weights.items() if not k.startswith("classifier.")}, folder / "model.safetensors",
              metadata={"format": "pt"})
    return folder


def _pickled(folder, model, tokenizer):
    import torch

    _save(folder, model, tokenizer)
    (folder / "model.safetensors").unlink()
    torch.save(model.state_dict(), folder / "pytorch_model.bin")
    return folder


def _bigger_vocabulary(folder, model, tokenizer):
    import copy

    grown = copy.deepcopy(tokenizer)
    grown.add_tokens(["zzyzxtoken1", "zzyzxtoken2"])
    return _save(folder, model, grown)


def _deeper(folder, model, tokenizer):
    from transformers import AutoModelForSequenceClassification

    from bench.stages.models import resolve_path

    deeper = AutoModelForSequenceClassification.from_pretrained(resolve_path(_pair_strong()), num_labels=1,
                                                                num_hidden_layers=3)
    return _save(folder, deeper, tokenizer)


def _pair_strong():
    from bench.core.protocols import MODEL_PAIRS

    return MODEL_PAIRS.get("tiny-cli").strong


@pytest.mark.parametrize("make, problem", [
    (_two_labels, "has 2 labels"),
    (_no_head, "its weights hold no trained reward head (classifier.*)"),
    (_pickled, "no safetensors weights in it (it has pytorch_model.bin: pickled weights run code"),
    (_bigger_vocabulary, "its tokenizer has token ids up to 30523 but its config's vocabulary has 30522 embeddings"),
    (_deeper, "is not the strong model of pair 'tiny-cli' (minilm-l6): layers 3 (the pair's: 2)"),
])
def test_bad_checkpoints_are_refused_before_any_teacher_or_score(walk, trained, tmp_path, make, problem):
    folder = make(tmp_path / "checkpoint", *trained)
    code, _, err = _evaluate(walk, tmp_path, folder)
    assert code == 2 and problem in err and "Fix:" in err, err
    assert not (tmp_path / "results").exists() or not list((tmp_path / "results").rglob("result.json"))
    assert not (tmp_path / "cache" / "teacher").exists()   # refused before the teacher was even trained


def test_a_backbone_without_a_head_is_refused(walk, tmp_path):
    from bench.stages.models import resolve_path

    code, _, err = _evaluate(walk, tmp_path, resolve_path(_pair_strong()))
    assert code == 2 and "is a BertModel: a backbone without a reward head" in err


def test_a_pair_that_reads_rewards_elsewhere_is_refused(walk, tmp_path):
    from bench.core.errors import BenchError
    from bench.core.settings import RunSettings
    from bench.stages.evaluate import evaluate

    seed, source = walk.cells()[0]
    models = dataclasses.replace(walk.models, name="tiny-cli-mean", strong=dataclasses.replace(
        walk.models.strong, readout="response_mean"))
    settings = RunSettings(walk.protocol, models, "byo", sources=[source], seeds=[seed], out=tmp_path / "results",
                           cache_dir=tmp_path / "cache")
    with pytest.raises(BenchError, match="reads its students' rewards at 'response_mean'"):
        evaluate(settings, str(walk.student(seed, source)), labels=walk.work / "labels")
    assert not (tmp_path / "cache").exists() and not (tmp_path / "results").exists()


def test_labels_of_another_cell_are_refused(walk, tmp_path):
    seed, source = walk.cells()[0]
    other = walk.cells()[1][1]
    code, _, err = bench("evaluate", "--name", "byo", "--protocol", walk.protocol.name, "--models", walk.models.name,
                         "--source", source, "--seeds", str(seed), "--student", str(walk.student(seed, source)),
                         "--labels", str(walk.labels(seed, other)), "--out", str(tmp_path / "results"),
                         "--cache-dir", str(walk.cache))
    assert code == 2 and f"they are the labels of {other} seed {seed}" in err
    assert not list((tmp_path / "results").rglob("result.json"))


@pytest.mark.parametrize("argv, problem", [
    (["--name", "naive"], "--name 'naive' is a registered method"),
    (["--name", "byo", "--source", "recipes", "travel"], "2 cells but one checkpoint"),
    (["--name", "byo", "--param", "loss=<b>"], "--param loss=<b>"),
])
def test_bad_evaluate_options_are_refused(walk, tmp_path, argv, problem):
    code, _, err = bench("evaluate", *argv, "--protocol", walk.protocol.name, "--models", walk.models.name,
                         "--student", str(walk.student(*walk.cells()[0])), "--labels", str(walk.work / "labels"),
                         "--out", str(tmp_path))
    assert code == 2 and problem in err
    assert not list(tmp_path.iterdir())


def test_a_decoder_tokenizer_without_a_chat_template_is_refused(tmp_path, small_protocol):
    from decoder_fixtures import save_tiny_decoder
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from bench.core.errors import BenchError
    from bench.core.settings import RunSettings
    from bench.core.specs import ModelPairSpec, ModelSpec, TrainConfig
    from bench.stages.evaluate import evaluate

    base = tmp_path / "qwen"
    save_tiny_decoder(base, "qwen")
    spec = ModelSpec(name="tiny-qwen", path=str(base), architecture="decoder")
    models = ModelPairSpec(name="tiny-qwen-pair", description="tiny random Qwen2", weak=dataclasses.replace(
        spec, num_layers=1), strong=spec, teacher_train=TrainConfig(1e-3, 1, 8), student_train=TrainConfig(1e-3, 1, 8))
    model = AutoModelForSequenceClassification.from_pretrained(base, num_labels=1)
    tokenizer = AutoTokenizer.from_pretrained(base)
    tokenizer.chat_template = None
    folder = _save(tmp_path / "no-template", model, tokenizer)
    (folder / "chat_template.jinja").unlink(missing_ok=True)
    settings = RunSettings(small_protocol, models, "byo", sources=[small_protocol.datasets[0]], seeds=[0],
                           out=tmp_path / "results", cache_dir=tmp_path / "cache")
    with pytest.raises(BenchError, match="its tokenizer has no chat template"):
        evaluate(settings, str(folder), labels=tmp_path / "labels-not-read")
    assert not (tmp_path / "cache" / "teacher").exists() and not (tmp_path / "results").exists()


# --- other checkpoints: a peft adapter, a hub id --------------------------------------------------------------
def test_a_peft_adapter_on_the_pairs_strong_model(walk, tmp_path):
    from peft import LoraConfig, TaskType, get_peft_model
    from transformers import AutoModelForSequenceClassification

    from bench.stages.models import resolve_path

    base = AutoModelForSequenceClassification.from_pretrained(resolve_path(_pair_strong()), num_labels=1,
                                                              num_hidden_layers=2)
    with warnings.catch_warnings():   # peft still asks transformers 5 by a deprecated name
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
        adapter = get_peft_model(base, LoraConfig(task_type=TaskType.SEQ_CLS, r=4, lora_alpha=8,
                                                  target_modules=["query", "value"]))
    adapter.save_pretrained(tmp_path / "adapter")
    code, _, err = _evaluate(walk, tmp_path, None, "--adapter", str(tmp_path / "adapter"), cache=walk.cache)
    assert code == 0, err
    [result_file] = (tmp_path / "results").rglob("result.json")
    cell = load_cell(result_file.parent)
    assert cell.external.adapter["files"]["adapter_model.safetensors"] == sha256_file(
        tmp_path / "adapter" / "adapter_model.safetensors")
    assert cell.external.checkpoint["pair_strong_model"] == "minilm-l6"


def test_a_hub_id_is_read_from_the_hub_cache_with_its_commit(walk, tmp_path, monkeypatch):
    import huggingface_hub.constants

    seed, source = walk.cells()[0]
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hub" / "models--someone--minilm-trl"
    shutil.copytree(walk.student(seed, source), repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    code, _, err = _evaluate(walk, tmp_path, "someone/minilm-trl", cache=walk.cache)
    assert code == 0, err
    [result_file] = (tmp_path / "results").rglob("result.json")
    record = load_cell(result_file.parent).external.checkpoint
    assert record["source"] == "hub" and record["hub_id"] == "someone/minilm-trl" and record["commit"] == commit
    assert record["files"]["model.safetensors"] == sha256_file(walk.student(seed, source) / "model.safetensors")
    code, _, err = _evaluate(walk, tmp_path / "missing", "someone/not-there", cache=walk.cache)
    assert code == 2 and "the Hub gives no model someone/not-there" in err
