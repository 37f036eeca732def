"""Plans fixed before their data: a committed file names a family of comparisons and the rule that decides them,
and every look ``bench compare --until-decided --plan FILE`` makes is logged under the plan's id, so that a look
made under another plan (or none) cannot count towards its decision.

A plan file (``plans/<name>-v<version>.json``):

    {"plan": "mini-v2-reference", "version": 2, "fixed": "2026-12-04",
     "protocol": "mini-v2", "models": "tiny-lr3e-4", "metric": "nts",
     "looks": [3, 20], "spending": "obrien-fleming", "level": 0.95, "precision": 1.0,
     "control": {"baseline": "naive", "from_seeds": 5},
     "family": "holm",
     "comparisons": [{"a": "warm", "b": "naive", "fresh_from": 3}, ...]}

- ``looks``, ``spending``, ``level``: the sequential boundary (bench.core.sequential): its looks must be the
  protocol's, the rest this harness's.
- ``control``: the baseline's replicates correct each run's difference from ``from_seeds`` seeds on, or null for a
  plan fixed without that correction. This harness applies its own rule (bench.core.runs.CONTROL_FROM: since
  2026-12-07 no control), so a plan whose rule is not it is refused: its looks were decided by another rule.
- ``family``: how the comparisons' verdicts are stated together (Holm over the family, beside each alone).

A plan's id is its name, version and the first 12 hex digits of its file's sha256 (``Plan.id``): a plan is
changed by a new version, and an edited file is another plan.
"""
from __future__ import annotations

import hashlib
import json
import re
from datetime import date
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bench.core.errors import BenchError

SPENDING = "obrien-fleming"   # bench.core.sequential: O'Brien-Fleming-type spending (Lan & DeMets)
FAMILY = "holm"
LOOKS_LOG = "looks"           # <results folder>/looks/<A>--<B>[--from<N>].jsonl: every look and its plan


class Control(BaseModel):
    model_config = ConfigDict(extra="forbid")
    baseline: str
    from_seeds: int = Field(ge=2)


class Comparison(BaseModel):
    model_config = ConfigDict(extra="forbid")
    a: str
    b: str
    fresh_from: int = Field(0, ge=0)


class Plan(BaseModel):
    model_config = ConfigDict(extra="forbid")
    plan: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$")
    version: int = Field(ge=1)
    fixed: date
    protocol: str
    models: str
    metric: str = Field(pattern="^(nts|bon-nts)$")
    looks: tuple[int, int]
    spending: str
    level: float
    precision: float = Field(ge=0)
    control: Control | None
    family: str
    comparisons: list[Comparison] = Field(min_length=1)
    note: str = ""   # what a reader needs besides the fields: when and from what a plan written later was taken
    sha256: str = Field("", exclude=True)   # of the file it was read from

    @property
    def id(self) -> str:
        return f"{self.plan} v{self.version} ({self.sha256[:12]})"

    def comparison(self, a: str, b: str, fresh_from: int) -> Comparison | None:
        return next((c for c in self.comparisons if (c.a, c.b, c.fresh_from) == (a, b, fresh_from)), None)


def read_plan(path: Path) -> Plan:
    """The plan in ``path``; a BenchError naming what is wrong with the file."""
    try:
        raw = Path(path).read_bytes()
        plan = Plan.model_validate(json.loads(raw))
    except OSError as error:
        raise BenchError(f"--plan {path}: cannot read it ({error.strerror})") from None
    except ValueError as error:   # not JSON, or not a plan (pydantic's ValidationError is a ValueError)
        what = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors()[:5]) \
            if isinstance(error, ValidationError) else str(error)[:200]
        raise BenchError(f"--plan {path}: not a plan file ({what}). Fix: write it as bench/core/plans.py shows") from None
    return plan.model_copy(update={"sha256": hashlib.sha256(raw).hexdigest()})


def read_plans(folder: Path) -> list[Plan]:
    """Every plan file in ``folder`` (none where it is missing), in the order they were fixed (date, then name and
    version); a BenchError names a file that is not a plan."""
    found = [read_plan(path) for path in sorted(Path(folder).glob("*.json"))] if Path(folder).is_dir() else []
    return sorted(found, key=lambda plan: (plan.fixed, plan.plan, plan.version))


def plan_of(plans: list[Plan], protocol, models: str, a: str, b: str, fresh_from: int, metric: str,
            control_from: int | None, level: float) -> Plan | None:
    """The first of ``plans`` (as ``read_plans`` orders them: by the date each was fixed) that lists A − B (from
    ``fresh_from``) on this group under the rule this harness applies (``rule_problems``): the one its looks under
    that rule were made under, as a later version adds comparisons beside it; None for a comparison none lists."""
    for plan in plans:
        if plan.models == models and plan.comparison(a, b, fresh_from) is not None \
                and not rule_problems(plan, protocol, metric, control_from, level):
            return plan
    return None


def rule_problems(plan: Plan, protocol, metric: str, control_from: int | None, level: float) -> list[str]:
    """What keeps ``plan`` from being the rule this harness applies to ``protocol`` (a ProtocolSpec) and ``metric``
    (``control_from``: bench.core.runs.CONTROL_FROM, None for no control; ``level``: bench.core.sequential.LEVEL);
    empty when nothing."""
    problems = []
    if plan.protocol != protocol.name:
        problems.append(f"it is for protocol {plan.protocol}, not {protocol.name}")
    if plan.metric != metric:
        problems.append(f"it decides on {plan.metric}, not {metric}")
    if tuple(plan.looks) != tuple(protocol.looks or ()):
        problems.append(f"its looks are {list(plan.looks)}, the protocol's {list(protocol.looks or ())}")
    if plan.spending != SPENDING or plan.level != level or plan.family != FAMILY:
        problems.append(f"its boundary ({plan.spending}, level {plan.level}, family {plan.family}) is not this "
                        f"harness's ({SPENDING}, level {level}, family {FAMILY})")
    fixed = None if plan.control is None else plan.control.from_seeds
    if fixed != control_from:
        problems.append(f"it fixed {'no control' if fixed is None else f'the control from {fixed} seeds'}, and this "
                        "harness " + ("applies no control" if control_from is None else
                                      f"corrects each run by the baseline's replicates from {control_from} seeds"))
    return problems


def check_rule(plan: Plan, protocol, metric: str, control_from: int | None, level: float) -> None:
    """Refuse a plan that is not for this protocol and metric, or whose rule is not the one this harness applies."""
    problems = rule_problems(plan, protocol, metric, control_from, level)
    if problems:
        raise BenchError(f"plan {plan.id}: {'; '.join(problems)}. Its looks were (or would be) decided by another "
                         "rule. Fix: commit a new version of the plan, fixed before the looks it is to decide")


def log_path(out: Path, a: str, b: str, fresh_from: int, metric: str = "nts") -> Path:
    """A comparison's log of looks: one per metric and first seed (``--fresh-from``)."""
    return Path(out) / LOOKS_LOG / f"{_log_stem(a, b, metric)}{f'--from{fresh_from}' if fresh_from else ''}.jsonl"


def _log_stem(a: str, b: str, metric: str) -> str:
    return f"{a}--{b}{'' if metric == 'nts' else '--' + metric}"


def logged_looks(path: Path) -> list[dict]:
    """The looks a comparison's log holds; a last line cut off mid-write is not one."""
    if not path.is_file():
        return []
    found = []
    for line in path.read_text().splitlines():
        try:
            found.append(json.loads(line))
        except ValueError:
            continue
    return found


def check_log(out: Path, plan: Plan | None, a: str, b: str, from_seed: int, metric: str = "nts") -> None:
    """Refuse to go on with A − B where an earlier look at any of the seeds from ``from_seed`` on was made under
    another plan than ``plan`` (or under none, where one is given now, or under one, where none is): such a look may
    have shaped the plan or the choice to go on, so it cannot count towards this plan's decision. Every log of the
    comparison on this metric is read (``--fresh-from`` keeps one per first seed), so a fresh start must start past
    the seeds looked at under another plan."""
    mine = plan.sha256 if plan is not None else None
    stem = _log_stem(a, b, metric)
    logs = [path for path in (Path(out) / LOOKS_LOG).glob("*.jsonl")
            if path.name == f"{stem}.jsonl" or re.fullmatch(rf"{re.escape(stem)}--from\d+\.jsonl", path.name)]
    other = [look for path in logs for look in logged_looks(path) if look.get("plan_sha256") != mine
             and int(look.get("fresh_from") or 0) + int(look.get("seeds") or 0) > from_seed]
    if other:
        past = max(int(look.get("fresh_from") or 0) + int(look.get("seeds") or 0) for look in other)
        made = other[-1].get("plan") or "no plan"
        now = plan.id if plan is not None else "no plan"
        raise BenchError(f"{Path(out) / LOOKS_LOG}: {len(other)} earlier look(s) of {a} − {b} (up to seed {past - 1}) "
                         f"were made under {made}, and this one would be under {now}: a look under another plan cannot "
                         f"count towards its decision. Fix: go on under the plan those looks were made under, or start "
                         f"the comparison afresh from seed {past} (--fresh-from {past}, and a plan comparison with that "
                         "fresh_from)")


def check_unlogged(plan: Plan, a: str, b: str, held: int, from_seed: int) -> None:
    """Refuse to start a plan's first look (no look of A − B logged yet) where A − B already holds more seeds (from
    ``from_seed`` on) than that look: no log says who looked at them (results made before looks were logged, or by
    another tool), and they may have been seen."""
    if held > plan.looks[0]:
        raise BenchError(f"{a} − {b} already holds {held} seeds{f' from seed {from_seed}' if from_seed else ''}, more "
                         f"than plan {plan.id}'s first look ({plan.looks[0]}), and no look at them is logged: they may "
                         "have been looked at before the plan. Fix: start the comparison afresh past them (--fresh-from "
                         f"{from_seed + held}, and a plan comparison with that fresh_from)")


def log_look(path: Path, plan: Plan | None, delta, fresh_from: int) -> None:
    """Append one look (a bench.core.runs.RunsDelta) to the comparison's log, with its plan's id."""
    path.parent.mkdir(parents=True, exist_ok=True)
    look = {"plan": plan.id if plan is not None else None, "plan_sha256": plan.sha256 if plan is not None else None,
            "fresh_from": fresh_from, "seeds": delta.seeds, "runs": delta.runs, "estimate": delta.estimate,
            "low": delta.low, "high": delta.high, "decided": bool(delta.decided), "controls": delta.controls}
    with open(path, "a") as handle:
        handle.write(json.dumps(look) + "\n")
        handle.flush()
