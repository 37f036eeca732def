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
