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


def test_until_decided_grows_a_comparison_look_by_look(tmp_path, capsys, small_protocol, registered_small):
    """bench compare --until-decided on a protocol seeded per source: runs whole seeds of both methods until
    it stops, says why, and resumes (a second call runs nothing more)."""
    from bench.cli import main
    from bench.core.protocols import PROTOCOLS

    _, models = registered_small
    protocol = dataclasses.replace(small_protocol, name="mini-seq", seeding="per-source", looks=(2, 3), seeds=(0, 1))
    if protocol.name not in PROTOCOLS:
        PROTOCOLS.register(protocol.name, protocol)
    out = tmp_path / "out"
    for method, params in (("naive", {}), ("length", {})):
        pipeline.run(RunSettings(protocol, models, method, params, protocol.datasets, [0, 1], out, tmp_path / "cache"))
    args = ["compare", "length", "naive", "--out", str(out), "--until-decided", "--precision", "0",
            "--cache-dir", str(tmp_path / "cache")]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "2 seeds" in printed and "stopped:" in printed
    looked = 2 if "stopped: decided" in printed.split("3 seeds")[0] else 3
    for slug in ("naive", "length"):
        seeds = {p.name for p in (out / protocol.name / models.name / slug).iterdir()}
        assert seeds == {f"seed{s}" for s in range(looked)}
    assert main(args) == 0   # resumable: the same verdict, nothing run again
    verdict = printed.splitlines()[-1].split(";")[0]
    assert capsys.readouterr().out.splitlines()[-1].split(";")[0] == verdict
