"""The docs show the code that the tests run: docs/adding-a-method.md against the example plugin."""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = ROOT / "tests" / "plugins" / "shiftbench-example"


def code_blocks(path: Path, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", path.read_text(), flags=re.S)


def test_adding_a_method_shows_the_example_plugin_verbatim():
    doc = ROOT / "docs" / "adding-a-method.md"
    python = code_blocks(doc, "python")
    assert python[0] == (PLUGIN / "shiftbench_example" / "smoothed.py").read_text()
    assert code_blocks(doc, "toml")[0] == (PLUGIN / "pyproject.toml").read_text()


def test_the_hand_computation_in_the_doc_passes(monkeypatch):
    """The page's test file, run as the page says: beside smoothed.py, importing it."""
    doc = ROOT / "docs" / "adding-a-method.md"
    monkeypatch.syspath_prepend(str(PLUGIN / "shiftbench_example"))   # where smoothed.py is
    monkeypatch.delitem(sys.modules, "smoothed", raising=False)
    namespace: dict = {}
    exec(code_blocks(doc, "python")[1], namespace)
    namespace["test_smoothed_by_hand"]()


def test_bring_your_own_student_names_the_losses_of_its_script_and_the_test_that_runs_it():
    """The page's commands are run by tests/test_byo_student.py::test_the_walk_of_the_doc_runs_every_step
    (it reads them from the page); here, what the page says about the script matches the script."""
    doc = (ROOT / "docs" / "bring-your-own-student.md").read_text()
    script = (ROOT / "examples" / "trl_reward_model.py").read_text()
    choices = re.search(r'"--loss", choices=\[(.*?)\]', script).group(1)
    assert [c.strip(' "') for c in choices.split(",")] == re.findall(r"^\| `(\w+)`(?: \(default\))? \|", doc, flags=re.M)
    assert "tests/test_byo_student.py::test_the_walk_of_the_doc" in doc
    assert (ROOT / "tests" / "test_byo_student.py").read_text().count("def test_the_walk_of_the_doc") == 1


def test_the_results_table_is_the_boards_ranking(committed_validations):
    """docs/results/mini-tiny.md's reference table is `bench leaderboard --markdown --only mini tiny` on
    submissions/, as it says: landing a reference submission without regenerating the table fails here."""
    from leaderboard import core

    readme = (ROOT / "docs" / "results" / "mini-tiny.md").read_text()
    header = "| rank | method | params | NTS | decided |"
    table = readme[readme.index(header):].split("\n\n", 1)[0]
    board = core.load_board(ROOT / "submissions")   # from the session's validation record
    assert table == core.markdown(board, protocol="mini", models="tiny")
