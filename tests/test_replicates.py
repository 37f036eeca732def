"""Replicates (the A/A test) and per-source seeding: what a cell's randomness derives from."""
import dataclasses

from bench.core.compare import board_for
from bench.core.data import STUDENT_STAGES, cell_seed, stage_seed, sub_seed
from bench.core.settings import RunSettings
from bench.stages import pipeline

STAGES = ("split", "order", "teacher-init", "teacher-order", *STUDENT_STAGES)


def test_shared_seeding_is_v1s(small_protocol):
    """A protocol whose sources share their seeds (v1) derives every stage as it always did."""
    for stage in STAGES:
        assert stage_seed(small_protocol, 3, "mini/recipes", stage) == sub_seed(3, stage)
        assert stage_seed(small_protocol, 3, "mini/travel", stage) == sub_seed(3, stage)


def test_per_source_seeding_gives_every_cell_its_own_stages(small_protocol):
    own = dataclasses.replace(small_protocol, seeding="per-source")
    recipes = [stage_seed(own, 3, "mini/recipes", s) for s in STAGES]
    travel = [stage_seed(own, 3, "mini/travel", s) for s in STAGES]
    assert not set(recipes) & set(travel)
    assert cell_seed(own, 3, "mini/recipes") != cell_seed(own, 4, "mini/recipes")


def test_a_replicate_redraws_the_students_stages_only(small_protocol):
    for stage in STAGES:
        same = stage_seed(small_protocol, 0, "mini/recipes", stage, replicate=1) == \
            stage_seed(small_protocol, 0, "mini/recipes", stage)
        assert same == (stage not in STUDENT_STAGES)
    assert stage_seed(small_protocol, 0, "mini/recipes", "student-init", 1) != \
        stage_seed(small_protocol, 0, "mini/recipes", "student-init", 2)


def test_a_replicate_trains_a_new_student_on_the_same_teacher(tmp_path, small_protocol, small_models):
    protocol = dataclasses.replace(small_protocol, seeding="per-source")
    base = RunSettings(protocol, small_models, "naive", {}, protocol.datasets[:1], [0], tmp_path / "out",
                       tmp_path / "cache", command="test")
    (first,), (again,) = pipeline.run(base), pipeline.run(base.replace(replicate=1))
    assert again.replicate == 1 and first.replicate == 0
    assert again.teacher["cache_key"] == first.teacher["cache_key"] and again.teacher["reused"]
    assert again.derived_seeds["split"] == first.derived_seeds["split"]
    assert again.derived_seeds["student-init"] != first.derived_seeds["student-init"]
    assert again.cell_key != first.cell_key
    assert (tmp_path / "out" / protocol.name / small_models.name / "naive#1").is_dir()
    # the two rows compare as two methods of one board, paired on the one teacher
    board, names = board_for(tmp_path / "out", ["naive", "naive#1"])
    assert names == ["naive", "naive#1"]
    assert board.compare("naive#1", "naive").deltas["nts"].estimate == \
        again.metrics[protocol.targets_of(protocol.datasets[0])[0]].nts - \
        first.metrics[protocol.targets_of(protocol.datasets[0])[0]].nts


def test_until_decided_grows_a_comparison_look_by_look(tmp_path, capsys, monkeypatch, small_protocol,
                                                       registered_small):
    """bench compare --until-decided on a protocol seeded per source: runs whole seeds of both methods (not the
    baseline's replicate: the rule applies no control, so it would correct nothing), until it stops, says why, and
    resumes (a second call runs nothing more). Each side's cells of the seeds it adds are checked once
    (bench.stages.resume), not again as it runs."""
    from bench.cli import main
    from bench.core.protocols import PROTOCOLS
    from bench.stages import resume

    checked = []
    monkeypatch.setattr(resume, "findings", lambda settings, threads: checked.append(settings.method) or [])

    _, models = registered_small
    protocol = dataclasses.replace(small_protocol, name="mini-seq", seeding="per-source", looks=(2, 3), seeds=(0, 1))
    # for this test only: the registries are in the validation record's key (conftest.py: committed_validations)
    monkeypatch.setitem(PROTOCOLS._entries, protocol.name, protocol)
    out = tmp_path / "out"
    for method, params in (("naive", {}), ("length", {})):
        pipeline.run(RunSettings(protocol, models, method, params, protocol.datasets, [0, 1], out, tmp_path / "cache"))
    pipeline.run(RunSettings(protocol, models, "naive", {}, protocol.datasets, [0, 1], out, tmp_path / "cache",
                             replicate=1))
    # the protocol x pair folder bench run wrote (the root works too: tests/test_bon_cell.py): new seeds go beside
    args = ["compare", "length", "naive", "--out", str(out / protocol.name / models.name), "--until-decided",
            "--precision", "0", "--cache-dir", str(tmp_path / "cache")]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "2 seeds" in printed and "stopped:" in printed and "naive#1" not in printed
    looked = 2 if "stopped: decided" in printed.split("3 seeds")[0] else 3
    for slug, ran in (("naive", looked), ("length", looked), ("naive#1", 2)):
        seeds = {p.name for p in (out / protocol.name / models.name / slug).iterdir()}
        assert seeds == {f"seed{s}" for s in range(ran)}
    assert checked == ["length", "naive"] * (looked - 2)   # one check per side and look that adds a seed
    assert not (out / protocol.name / models.name / protocol.name).exists()
    from bench.stages.decide import first_result, settings_of

    for given in (out, out / protocol.name / models.name, out / protocol.name / models.name / "naive"):
        assert settings_of(first_result(out, "naive"), given, None).out == out   # where bench run writes them
    assert main(args) == 0   # resumable: the same verdict, nothing run again
    verdict = printed.splitlines()[-1].split(";")[0]
    assert capsys.readouterr().out.splitlines()[-1].split(";")[0] == verdict


def test_fresh_from_leaves_out_the_seeds_that_chose_the_comparison(tmp_path, capsys, small_protocol, registered_small,
                                                                  monkeypatch):
    """--fresh-from 1: seed 0 chose the method (the zoo's best three, say), so the comparison runs and looks at
    seeds 1 on only; its numbers are those of the same folder without seed 0, and seed 0 is never run again."""
    import shutil

    from bench.cli import main
    from bench.core.protocols import PROTOCOLS

    _, models = registered_small
    protocol = dataclasses.replace(small_protocol, name="mini-fresh", seeding="per-source", looks=(2, 3), seeds=(0,))
    # for this test only: the registries are in the validation record's key (conftest.py: committed_validations)
    monkeypatch.setitem(PROTOCOLS._entries, protocol.name, protocol)
    out = tmp_path / "out"
    for method, params, replicate in (("naive", {}, 0), ("length", {}, 0), ("naive", {}, 1)):
        pipeline.run(RunSettings(protocol, models, method, params, protocol.datasets, [0], out, tmp_path / "cache",
                                 replicate=replicate))
    group = out / protocol.name / models.name
    written = {p: p.stat().st_mtime_ns for p in group.glob("*/seed0/*/result.json")}
    assert main(["compare", "length", "naive", "--out", str(group), "--until-decided", "--fresh-from", "1",
                 "--precision", "0", "--cache-dir", str(tmp_path / "cache")]) == 0
    printed = capsys.readouterr().out
    assert "from seed 1 (the seeds before it chose length: left out; the last look at seed 2, the last a submission " \
        "holds)" in printed and "\n  2 seeds," in printed
    held = {p.name for p in (group / "length").iterdir()}
    assert held == {"seed0", "seed1", "seed2"}   # the plan's looks (2, 3) end at seed 2 (ProtocolSpec.seed_order)
    assert {p.name for p in (group / "naive#1").iterdir()} == {"seed0"}   # a replicate corrects nothing: not grown
    assert {p: p.stat().st_mtime_ns for p in group.glob("*/seed0/*/result.json")} == written   # seed 0 not rerun
    assert main(["compare", "length", "naive", "--out", str(group), "--until-decided", "--fresh-from", "2"]) == 2
    assert "--fresh-from 2 leaves 1 of the seeds a submission of mini-fresh can hold" in capsys.readouterr().err
    assert main(["compare", "length", "naive", "--out", str(group), "--fresh-from", "9"]) == 2
    assert "length has no finished cell from seed 9 on under" in capsys.readouterr().err
    assert main(["compare", "length", "naive", "--out", str(group), "--fresh-from", "1"]) == 0
    fresh = capsys.readouterr().out
    without = tmp_path / "without-seed0"
    shutil.copytree(group, without)
    for folder in without.glob("*/seed0"):
        shutil.rmtree(folder)
    assert main(["compare", "length", "naive", "--out", str(without)]) == 0
    alone = capsys.readouterr().out
    assert f"({len(held) - 1} seeds from seed 1, " in fresh and fresh.splitlines()[1:] == alone.splitlines()[1:]
    assert main(["compare", "length", "naive", "--out", str(group)]) == 0   # without it, seed 0 counts
    assert capsys.readouterr().out.splitlines()[1:] != alone.splitlines()[1:]


def test_a_sequential_protocol_takes_further_whole_seeds_without_a_gap(small_protocol):
    """seed_order / submission_seeds: the protocol's seeds, then the next ones up to the plan's last look."""
    fixed = dataclasses.replace(small_protocol, seeds=(0, 1))
    assert fixed.seed_order == (0, 1) and fixed.submission_seeds([0, 1, 5]) == (0, 1)
    plan = dataclasses.replace(small_protocol, seeding="per-source", looks=(2, 5), seeds=(0, 1))
    assert plan.seed_order == (0, 1, 2, 3, 4)
    assert plan.submission_seeds([0]) == (0, 1)              # the protocol's own seeds are always required
    assert plan.submission_seeds([0, 1, 2]) == (0, 1, 2)
    assert plan.submission_seeds([0, 1, 3]) == (0, 1, 2, 3)  # a gap: seed 2 is required, so it shows as missing
    assert plan.submission_seeds([0, 1, 9]) == (0, 1)        # past the last look: not a seed of the protocol
    assert "then seeds up to 4 in order" in plan.seeds_text


def test_a_submission_of_a_sequential_protocol_holds_its_extra_seeds_whole(tmp_path, small_protocol, small_models):
    """bench submit packs every whole seed a comparison grew to; bench validate accepts them, and refuses
    a seed with a missing cell or a seed past the plan (named, with the fix)."""
    import json
    import shutil

    import pytest

    from bench.core.errors import BenchError
    from bench.submissions import SUBMISSION_FILE, submit, validate_submission

    protocol = dataclasses.replace(small_protocol, name="mini-seq-sub", seeding="per-source", looks=(1, 3), seeds=(0,))
    protocols, pairs = {protocol.name: protocol}, {small_models.name: small_models}
    out = tmp_path / "out"
    pipeline.run(RunSettings(protocol, small_models, "length", {}, protocol.datasets, [0, 1, 2], out, tmp_path / "c"))
    results = out / protocol.name / small_models.name / "length"
    [written] = submit([results], tmp_path / "subs", "me", protocols=protocols, model_pairs=pairs)
    meta = json.loads((written / SUBMISSION_FILE).read_text())
    assert sorted({c["seed"] for c in meta["cells"]}) == [0, 1, 2] and meta["summary"]["seeds"] == 3
    assert validate_submission(written, protocols, pairs).ok

    shutil.rmtree(results / "seed1" / "mini__travel")   # seed 2 is whole, seed 1 is not: a gap
    with pytest.raises(BenchError, match=r"missing cells: seed 1 mini/travel; run them .* --seeds 0 1 2") as refused:
        submit([results], tmp_path / "subs2", "me", protocols=protocols, model_pairs=pairs)
    assert "or submit the protocol's seeds [0] alone: give bench submit a results folder without the cells of " \
        "seeds 1, 2" in str(refused.value)

    shorter = dataclasses.replace(protocol, looks=(1, 2))   # seed 2 is past this plan's last look
    found = "\n".join(map(str, validate_submission(written, {protocol.name: shorter}, pairs).errors))
    assert "seed 2, source 'mini/recipes' is not a cell of mini-seq-sub (seeds [0], then seeds up to 1" in found


def test_until_decided_neither_replaces_its_cells_nor_pairs_across_cpu_kernels(tmp_path, capsys, small_protocol,
                                                                             registered_small, monkeypatch):
    """Before it adds a seed, --until-decided checks every side's cells of it (bench.stages.resume) and stops with
    nothing run where a finished cell would be replaced (its key changed: another transformers, say) or where the
    seed's cells were made with other CPU kernels (its teacher would be retrained with other last bits)."""
    import json

    from bench.cli import main
    from bench.core.protocols import PROTOCOLS
    from bench.core.result_schema import RESULT_FILE

    _, models = registered_small
    protocol = dataclasses.replace(small_protocol, name="mini-kernels", seeding="per-source", looks=(2, 3), seeds=(0, 1))
    # for this test only: the registries are in the validation record's key (conftest.py: committed_validations)
    monkeypatch.setitem(PROTOCOLS._entries, protocol.name, protocol)
    out, cache = tmp_path / "out", tmp_path / "cache"
    for method, seeds in (("naive", [0, 1, 2]), ("length", [0, 1])):
        pipeline.run(RunSettings(protocol, models, method, {}, protocol.datasets, seeds, out, cache))
    group = out / protocol.name / models.name
    naive_seed2 = sorted((group / "naive" / "seed2").glob(f"*/{RESULT_FILE}"))
    args = ["compare", "length", "naive", "--out", str(group), "--until-decided", "--cache-dir", str(cache)]

    def edit(change) -> None:
        for path in naive_seed2:
            data = json.loads(path.read_text())
            change(data)
            path.write_text(json.dumps(data))

    edit(lambda r: r["environment"]["cpu"].update(torch_capability="AVX9"))
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "bench compare --until-decided grows a comparison on the cells its looks have read, so it stops here " \
        "with nothing run: the folder's cells of the next seeds of length were made with other CPU kernels (AVX9 " \
        "CPU kernels there, " in err and "seed 2 " in err and "grow it on a machine whose torch uses the kernels" in err
    assert "resume from the commit" not in err
    assert not (group / "length" / "seed2").exists()   # refused before any side ran

    edit(lambda r: r["environment"]["cpu"].pop("torch_capability") and r.update(cell_key="0" * 24))
    assert main(args) == 2
    err = capsys.readouterr().err
    assert f"{len(naive_seed2)} finished cell(s) of naive" in err
    assert "have another key than this run would give them (its code or settings differ" in err
    assert "resume from the commit, packages" in err and "AVX9" not in err and "run again" not in err
    assert not (group / "length" / "seed2").exists()
    assert [json.loads(p.read_text())["cell_key"] for p in naive_seed2] == ["0" * 24] * len(naive_seed2)


def test_a_plan_fixes_the_comparisons_and_rule_and_its_looks_cannot_mix_with_others(tmp_path, capsys, monkeypatch,
                                                                                    small_protocol, registered_small):
    """bench compare --until-decided --plan FILE (bench.core.plans): a plan whose rule is not the harness's, or that
    does not list the comparison, is refused before anything runs; each look is logged under the plan's id; and a
    later call under another plan (an edited file is one) or under none is refused, naming what to do."""
    import json
    import re

    from bench.cli import main
    from bench.core.plans import log_path, logged_looks
    from bench.core.protocols import PROTOCOLS

    _, models = registered_small
    protocol = dataclasses.replace(small_protocol, name="mini-plan", seeding="per-source", looks=(2, 3), seeds=(0, 1))
    monkeypatch.setitem(PROTOCOLS._entries, protocol.name, protocol)
    out = tmp_path / "out"
    for method, replicate in (("naive", 0), ("length", 0), ("naive", 1)):
        pipeline.run(RunSettings(protocol, models, method, {}, protocol.datasets, [0, 1], out, tmp_path / "cache",
                                 replicate=replicate))
    group = out / protocol.name / models.name
    plan = {"plan": "test-plan", "version": 1, "fixed": "2026-12-06", "protocol": protocol.name, "models": models.name,
            "metric": "nts", "looks": [2, 3], "spending": "obrien-fleming", "level": 0.95, "precision": 1.0,
            "control": None, "family": "holm",
            "comparisons": [{"a": "length", "b": "naive", "fresh_from": 0}]}

    def compare(given: dict | None, *more: str) -> int:
        args = ["compare", "length", "naive", "--out", str(group), "--until-decided", "--budget", "0",
                "--cache-dir", str(tmp_path / "cache"), *more]
        if given is not None:
            (tmp_path / "plan.json").write_text(json.dumps(given))
            args += ["--plan", str(tmp_path / "plan.json")]
        return main(args)

    def refused(why: str, given: dict | None, *more: str) -> bool:
        return compare(given, *more) != 0 and re.search(why, capsys.readouterr().err) is not None

    assert refused("it fixed the control from 5 seeds, and this harness applies no control",
                   {**plan, "control": {"baseline": "naive", "from_seeds": 5}})
    assert refused("its looks are \\[3, 20\\], the protocol's \\[2, 3\\]", {**plan, "looks": [3, 20]})
    assert refused("length − naive is not one of plan test-plan v1 .* Fix:",
                   {**plan, "comparisons": [{"a": "naive#1", "b": "naive"}]})
    assert refused("fixed ±1. Fix: drop --precision", plan, "--precision", "0")
    assert not log_path(group, "length", "naive", 0).exists()   # refused before any look

    assert compare(plan) == 0   # --budget 0: one look at the seeds held, then it stops
    assert "under plan test-plan v1 (" in capsys.readouterr().out
    (look,) = logged_looks(log_path(group, "length", "naive", 0))
    assert look["plan"].startswith("test-plan v1 (") and look["seeds"] == 2
    assert compare(plan) == 0 and len(logged_looks(log_path(group, "length", "naive", 0))) == 1   # the same look
    for other in ({**plan, "version": 2}, None):
        assert refused("made under test-plan v1 .* a look under another plan cannot count", other)


def test_a_plan_counts_no_seed_looked_at_before_it(tmp_path):
    """bench.core.plans: a plan's comparison starting afresh (--fresh-from) is refused where it would reuse seeds
    looked at under another plan in another log of the same comparison, and a plan's first look is refused where the
    folder already holds more seeds than that look and no log says who looked at them."""
    import json

    import pytest

    from bench.core.errors import BenchError
    from bench.core.plans import check_log, check_unlogged, log_path

    plan = type("P", (), {"sha256": "b" * 64, "id": "p v2 (bbbb)", "looks": (3, 20)})()
    earlier = log_path(tmp_path, "a", "naive", 0)
    earlier.parent.mkdir(parents=True)
    earlier.write_text(json.dumps({"plan": None, "plan_sha256": None, "fresh_from": 0, "seeds": 10}) + "\n")
    with pytest.raises(BenchError, match=r"up to seed 9\) were made under no plan.*afresh from seed 10"):
        check_log(tmp_path, plan, "a", "naive", 3)
    check_log(tmp_path, plan, "a", "naive", 10)   # past them: nothing reused
    check_log(tmp_path, plan, "a", "naive", 3, metric="bon-nts")   # another metric's looks are another log
    with pytest.raises(BenchError, match="already holds 12 seeds from seed 3.*--fresh-from 15"):
        check_unlogged(plan, "a", "naive", 12, 3)
    check_unlogged(plan, "a", "naive", 3, 0)   # the first look itself
