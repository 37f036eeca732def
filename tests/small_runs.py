"""Real run results and submissions on the shrunken protocol, made once per test session and shared
by the submission, leaderboard and browser tests (each run takes seconds)."""
from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

# method, params: a ceiling, a plain W2S student, and a two-point lam sweep for the ablation view
RUNS = (("naive", {}), ("ceiling", {}), ("anchor", {"lam": "0.5"}), ("anchor", {"lam": "2.0"}))


@dataclass(frozen=True)
class SmallRuns:
    results: Path          # bench run output: results/<protocol>/<models>/<slug>/seed0/<source>/
    submissions: Path      # bench submit output of every run
    protocols: dict        # the unregistered test protocol and model pair, for validation
    model_pairs: dict

    def copy_submissions(self, dest: Path) -> Path:
        """A private copy to tamper with."""
        shutil.copytree(self.submissions, dest)
        return dest


_made: dict[Path, SmallRuns] = {}


def small_runs(tmp_path_factory, protocol, models) -> SmallRuns:
    from bench import pipeline
    from bench.submissions import submit

    base = tmp_path_factory.getbasetemp()
    if base not in _made:
        results, cache, submissions = (tmp_path_factory.mktemp(n) for n in ("sub_results", "sub_cache", "submissions"))
        for method, params in RUNS:
            pipeline.run(protocol, models, method, params, list(protocol.datasets), list(protocol.seeds), results,
                         cache, command=f"bench run --method {method}")
        protocols, model_pairs = {protocol.name: protocol}, {models.name: models}
        submit([results], submissions, submitter="test suite", command="bench submit results",
               protocols=protocols, model_pairs=model_pairs)
        _made[base] = SmallRuns(results, submissions, protocols, model_pairs)
    return _made[base]
