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
    ([], "tiny"),                                              # mini's reference pair, as before
    (["--protocol", "mini-v2"], "tiny-lr3e-4"),                    # v2's board runs its own pair
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
