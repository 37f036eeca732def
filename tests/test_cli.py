from pathlib import Path

import pytest

from bench.cli import main


def test_list_commands(capsys):
    for what in ("methods", "protocols", "models", "datasets"):
        assert main(["list", what]) == 0
    out = capsys.readouterr().out
    assert "anchor" in out and "lam: float" in out and "mini v1.0" in out and "mini/pharmacy" in out


@pytest.mark.parametrize("argv, expected", [
    (["run", "--method", "anchr"], "Did you mean 'anchor'?"),
    (["run", "--method", "anchor", "--protocol", "minni"], "Did you mean 'mini'?"),
    (["run", "--method", "anchor", "--models", "tinyy"], "Did you mean 'tiny'?"),
    (["run", "--method", "anchor", "--source", "travl"], "Did you mean 'travel'?"),
    (["run", "--method", "anchor", "--param", "lam=abc"], "lam: float"),
    (["run", "--method", "anchor", "--param", "depth=3"], "Valid params"),
])
def test_bad_names_and_params_fail_fast(argv, expected, capsys, tmp_path):
    assert main([*argv, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert expected in err
    assert not list(tmp_path.iterdir())  # failed before any work


def test_param_needs_key_value(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--method", "anchor", "--param", "lam"])
    assert "key=value" in capsys.readouterr().err


def test_report_on_empty_folder(tmp_path, capsys):
    assert main(["report", "--out", str(tmp_path)]) == 1


@pytest.mark.parametrize("extra, pair", [
    ([], "tiny-lr3e-4"),                                       # the default protocol, mini-v2: its own pair
    (["--protocol", "mini"], "tiny"),                          # mini's reference pair, as before
    (["--protocol", "mini-v2+cap-train800-test100"], "tiny-lr3e-4"),   # a capped v2 keeps it
    (["--protocol", "mini-v2", "--models", "tiny"], "tiny"),   # an explicit --models wins
])
def test_models_default_to_the_protocols_reference_pair(extra, pair, tmp_path):
    from bench.cli import build_parser
    from bench.commands.settings import run_settings

    args = build_parser().parse_args(["run", "--method", "naive", "--out", str(tmp_path), *extra])
    assert run_settings(args).models.name == pair


def test_mini_v2_is_a_protocol_of_its_own():
    """v2 has a hash of its own and leaves v1's alone: v1's reference submissions stay valid; and every
    protocol's reference pair is a registered one."""
    from bench.core.protocols import MODEL_PAIRS, PROTOCOLS, protocol_hash

    assert all(PROTOCOLS.get(name).models in (None, *MODEL_PAIRS.names()) for name in PROTOCOLS.names())

    v1, v2 = PROTOCOLS.get("mini"), PROTOCOLS.get("mini-v2")
    assert protocol_hash(v1) == "527dcbde09261304" and protocol_hash(v2) != protocol_hash(v1)
    assert (v2.version, v2.seeding, v2.datasets) == ("2.0", "per-source", v1.datasets)


def test_a_run_says_its_nts_against_naives_reference_cells_of_its_seeds_and_that_one_look_decides_nothing():
    """bench run ends with the run's Δ NTS against the committed reference cells of naive on the same seeds and
    sources, where they ran on the same teacher; none for naive itself or without such cells."""
    from bench.commands.run import against_reference, reference_folder
    from bench.core.result_schema import CellResult
    from bench.core.store import is_store, load_store

    anchor = reference_folder("mini-v2", "tiny-lr3e-4").parent / "anchor_lam=1.0_layers=last"
    if not is_store(anchor):
        pytest.skip("no reference submissions")
    results = [r for r in map(CellResult.model_validate_json, load_store(anchor).results) if r.seed == 0]
    naive = {(r.seed, r.source): r for r in map(CellResult.model_validate_json,
                                                 load_store(reference_folder("mini-v2", "tiny-lr3e-4")).results)}
    by_hand = [m.nts - naive[0, r.source].metrics[t].nts for r in results for t, m in r.metrics.items()]
    line = against_reference(results, "mini-v2", "tiny-lr3e-4", Path("results"))
    assert line.startswith(f"Δ NTS vs naive's reference cells of seed 0 (submissions/mini-v2/tiny-lr3e-4/naive): "
                           f"{sum(by_hand) / len(by_hand):+.2f} points over {len(by_hand)} source → target cells")
    assert ("To decide: `bench run --method naive --seeds 0` beside it, then `bench compare anchor_lam=1.0_layers=last "
            "naive --out results/mini-v2/tiny-lr3e-4 --until-decided`") in line
    assert against_reference([naive[0, r.source] for r in results], "mini-v2", "tiny-lr3e-4", Path("results")) is None
    other = results[0].model_copy(update={"eval_sets": {k: e.model_copy(update={"teacher_acc": e.teacher_acc + 1})
                                                        for k, e in results[0].eval_sets.items()}})
    assert against_reference([other, *results[1:]], "mini-v2", "tiny-lr3e-4", Path("results")) is None
    assert against_reference(results, "mini", "tiny", Path("results")) is None   # v1's naive: another teacher


def test_a_cap_that_leaves_the_student_a_few_steps_is_warned_by_name(capsys, tmp_path):
    """At --cap-train 64 a mini-v2 student takes 2 steps and its loss stays at 0.693: the run says so, naming the
    protocol and the cap that gives it enough; the protocol's own pool (50 steps) says nothing."""
    from bench.cli import build_parser
    from bench.commands.settings import run_settings

    def warned(*extra):
        run_settings(build_parser().parse_args(["run", "--method", "naive", "--out", str(tmp_path), *extra]))
        return [line for line in capsys.readouterr().err.splitlines() if "warning" in line]

    assert warned() == []
    [line] = warned("--cap-train", "64", "--cap-test", "32")
    assert line.startswith("[bench] warning: mini-v2+cap-train64-test32 leaves the student about 2 training steps "
                           "(half of a 64-pair train pool, batches of 16, 1 epoch), under 20")
    assert line.endswith("(--cap-train 640, or no cap) gives it 20")


def test_a_param_given_twice_is_refused_not_silently_the_last(tmp_path, capsys):
    assert main(["run", "--method", "anchor", "--param", "lam=0.1", "--param", "lam=1", "--out", str(tmp_path)]) == 2
    assert "--param lam is given twice (lam=0.1 and lam=1)" in capsys.readouterr().err
    from bench.commands.args import params_of

    assert params_of([("lam", "0.1"), ("lam", "0.1"), ("layers", "mid")]) == {"lam": "0.1", "layers": "mid"}
