"""The student's scores from a process that has not imported the method's code.

A method that is not built in (a method file, an installed package) runs inside the harness's process: a file
that wraps ``bench.stages.pipeline.score_eval_sets`` at import could make every chosen response score +100, and
its run would still recompute (issue 59's ``patchy.py``). So its trained student is scored elsewhere
(``ApartScoring``): its weights are saved, and a fresh ``python -m bench.stages.apart`` loads the registered student
architecture, puts the weights in it, encodes the eval sets' and candidate sets' texts with its own formatter and
scores them with the registered scorer, on the run's device and thread count, so that the scores are those an
in-process scoring gives, to the bit (tests/test_score_apart.py). It checks, before it writes, that the method's
module is not among its imports. The parent reads nothing of the child but the scores it wrote.

What this does not do: the method's file still runs in the run's process, which starts the scoring process and
reads its scores, so a file written to defeat this one (patching ``scores_apart`` itself) could; the student's
misfit, a diagnostic, is scored in the run's process too. Against a submitter who means it, the host's check is a
rerun (``bench reproduce``), which this makes no weaker.

Built-in methods are scored in the run's own process (their code is the harness's, in every cell's key); set
``SHIFTBENCH_SCORE_APART=1`` to score every method apart.
"""
from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

APART_ENV = "SHIFTBENCH_SCORE_APART"
JOB, WEIGHTS, SCORES, ERROR = "job.json", "student.pt", "scores.json", "error.txt"
LAUNCHER_VARIABLES = ("WORLD_SIZE", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR",
                      "MASTER_PORT")
LAUNCHER_PREFIXES = ("TORCHELASTIC_", "ACCELERATE_")


def scores_apart(method) -> bool:
    """Whether ``method``'s student is scored in a separate process: every method not built in, or all of them
    where ``SHIFTBENCH_SCORE_APART=1``."""
    from methods import method_origin

    return method_origin(type(method))["kind"] != "built-in" or os.environ.get(APART_ENV) == "1"


class ApartScoring:
    """One student's scoring in a separate process: made with the trained ``student`` (its weights are written to a
    temporary folder with the job: the student's spec, the formatter's length, the eval sets' and candidate sets'
    texts, the batch size, the scorer and the thread count), then ``run()``. The caller may drop the student in
    between, so that the scoring process holds the only copy in memory (a GPU holds one 8B model, not two)."""

    def __init__(self, student, spec, max_length: int, evals: dict, sets: dict | None, batch_size: int, scorer: str,
                 module: str):
        import torch

        from bench.core.io import atomic_write_bytes
        from bench.core.specs import to_plain

        self._tmp = tempfile.TemporaryDirectory(prefix="shiftbench-score-")
        self.folder = Path(self._tmp.name)
        torch.save({name: tensor.detach().cpu() for name, tensor in student.state_dict().items()},
                   self.folder / WEIGHTS)
        from bench.core.distributed import state

        job = {"spec": to_plain(spec), "max_length": max_length, "batch_size": batch_size, "scorer": scorer,
               "threads": torch.get_num_threads(), "module": module, "device": str(state().device),
               "evals": {name: [[p.id, [list(m) for m in p.prompt], p.chosen, p.rejected] for p in pairs]
                         for name, pairs in evals.items()},
               "sets": None if sets is None else {
                   name: [[s.id, [list(m) for m in s.prompt], list(s.responses), list(s.grades), s.pair_id]
                          for s in its] for name, its in sets.items()}}
        atomic_write_bytes(self.folder / JOB, json.dumps(job).encode())

    def run(self) -> tuple[dict[str, tuple[list[float], list[float]]], dict[str, list[list[float]]] | None]:
        """(scores per eval set, as bench.stages.scorers.score_eval_sets gives them; per-candidate scores, as
        score_candidate_sets gives them, or None without candidate sets). A BenchError with the process's last
        words if it failed."""
        import gc

        import torch

        from bench.core.errors import BenchError

        # a launcher's rank variables would make the child join the run's process group: it is a process of its own
        env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARIABLES and not k.startswith(LAUNCHER_PREFIXES)}
        # this harness's bench, wherever it was imported from (a worktree, a checkout), and run from the job's
        # folder, so that a bench/ folder in the run's working directory cannot stand in for it
        env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                                             *filter(None, [env.get("PYTHONPATH")])])
        gc.collect()   # the student the caller dropped: its memory back before a second process loads it
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        try:
            # its progress bars go where the run's go; what stopped it, to ERROR
            done = subprocess.run([sys.executable, "-m", "bench.stages.apart", str(self.folder)],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, env=env, cwd=self.folder)
            if done.returncode != 0 or not (self.folder / SCORES).is_file():
                error = self.folder / ERROR
                raise BenchError(f"scoring the student in a separate process failed (exit {done.returncode}): "
                                 f"{error.read_text()[-2000:] if error.is_file() else 'it said nothing'}")
            found = json.loads((self.folder / SCORES).read_text())
        finally:
            self._tmp.cleanup()
        return ({name: (chosen, rejected) for name, (chosen, rejected) in found["scores"].items()},
                found["candidates"])


def _tupled(value):
    return tuple(_tupled(v) for v in value) if isinstance(value, list) else value


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.stages.apart FOLDER``: score the job in FOLDER (``ApartScoring``) and write its scores, or
    what stopped it to FOLDER/error.txt."""
    folder = Path((argv or sys.argv[1:])[0])
    try:
        return _score(folder)
    except Exception as error:  # noqa: BLE001 -- whatever it is, the run's message quotes it
        (folder / ERROR).write_text(f"{type(error).__name__}: {error}")
        return 1


def _score(folder: Path) -> int:
    import torch

    from bench.core.candidates import CandidateSet
    from bench.core.data import Pair
    from bench.core.io import atomic_write_bytes
    from bench.core.specs import ModelSpec
    from bench.stages.models import formatter_for, load_reward_model, load_tokenizer
    from bench.stages.scorers import SCORERS, score_candidate_sets, score_eval_sets

    job = json.loads((folder / JOB).read_text())
    torch.set_num_threads(job["threads"])   # as the parent's: float results depend on it
    spec = ModelSpec(**{name: _tupled(value) for name, value in job["spec"].items()})
    model = load_reward_model(spec, seed=0)   # the architecture; every weight is then the trained student's
    model.load_state_dict(torch.load(folder / WEIGHTS, weights_only=True), strict=True)
    model.to(job["device"])   # the run's own (a GPU: the one it trained on)
    formatter = formatter_for(spec, load_tokenizer(spec), job["max_length"])
    scorer = functools.partial(SCORERS.get(job["scorer"]), spec=spec)
    evals = {name: [Pair(pid, tuple(map(tuple, prompt)), chosen, rejected) for pid, prompt, chosen, rejected in rows]
             for name, rows in job["evals"].items()}
    scores = score_eval_sets(model, formatter, evals, job["batch_size"], "student", scorer)
    candidates = None
    if job["sets"] is not None:
        sets = {name: [CandidateSet(sid, tuple(map(tuple, prompt)), tuple(responses), tuple(grades), pair_id)
                       for sid, prompt, responses, grades, pair_id in rows] for name, rows in job["sets"].items()}
        candidates = score_candidate_sets(model, formatter, sets, evals, scores, job["batch_size"], "student", scorer)
    if job["module"] in sys.modules:   # what this process is for: the method's code never ran here
        raise RuntimeError(f"the method's module {job['module']} was imported by the scoring process")
    atomic_write_bytes(folder / SCORES, json.dumps({"scores": scores, "candidates": candidates}).encode())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
