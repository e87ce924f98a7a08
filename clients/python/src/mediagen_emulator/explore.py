"""Explore: a test run again and again, each run in a fresh tenant under an adversity plan the
emulator draws, judged by the emulator's verdict; a failing plan shrunk to the smallest that still
fails and written to a bundle file that replays it.

The emulator draws the plans (POST /_emulator/explore/draw), judges each run (GET
/_emulator/verdict), proposes smaller plans (POST /_emulator/explore/shrink) and writes the bundle
(GET /_emulator/bundle): this module only loops, so every helper explores alike. The pytest
plugin's ``--mediagen-explore=N`` uses it; so can any other runner:

    explorer = Explorer(emu.control, seed=7)
    found = explorer.explore(100, attempt)   # attempt(number, plan) -> Run
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Set

from .control import Control, _file_name

#: How many smaller plans a shrink tries at most, so that a flaky test cannot loop for ever.
SHRINK_BUDGET = 100


@dataclass
class Run:
    """One run of a test under a plan: its number (the draw's run), the plan, the plan's log
    line, the tenant it ran in, the emulator's verdict, the bundle when the verdict failed, and
    whatever the runner keeps of it (pytest: its reports)."""

    number: int
    plan: Dict[str, Any]
    verdict: Dict[str, Any]
    tenant: str = ""
    log: str = ""
    bundle: Optional[Dict[str, Any]] = None
    extra: Any = None

    @property
    def failed(self) -> bool:
        """Whether the verdict says the run failed."""
        return bool(self.verdict.get("failed"))


@dataclass
class Found:
    """A failure explore found: the run that found it, the smallest plan that still failed, and
    how many runs the shrink took."""

    first: Run
    smallest: Run
    shrink_runs: int = 0


@dataclass
class Explorer:
    """The explore loop over one emulator (any tenant's control: draw and shrink need none)."""

    control: Control
    seed: int = 1
    terminal: bool = False
    shrink_budget: int = SHRINK_BUDGET
    reached: Set[str] = field(default_factory=set)
    routes: Dict[str, int] = field(default_factory=dict)

    def draw(self, run: int) -> Dict[str, Any]:
        """The emulator's plan for run `run` ({"plan", "log"}), given what earlier runs reached."""
        return self.control.draw(self.seed, run, self.terminal, sorted(self.reached), self.routes)

    def learn(self, verdict: Mapping[str, Any], baseline: bool = False) -> None:
        """Keeps what a run reached, so that later draws favour what none did; the baseline run's
        routes are where later plans strike."""
        self.reached.update(verdict.get("reached") or [])
        if baseline:
            self.routes = {route: int(n) for route, n in (verdict.get("routes") or {}).items()}

    def explore(self, runs: int, attempt: Callable[[int, Dict[str, Any], str], Run]) -> Optional[Found]:
        """Runs `attempt(number, plan, log)` `runs` times, stopping at the first run whose verdict
        fails, whose plan it then shrinks; None when every run passed. As `mediagen-emulator
        explore` does, run 1 is the baseline, under no plan at all; each later run is under a
        plan drawn for it."""
        for number in range(1, runs + 1):
            drawn = {"plan": {"perturbations": []}, "log": "no perturbations"} if number == 1 else self.draw(number)
            run = attempt(number, drawn["plan"], drawn.get("log", ""))
            self.learn(run.verdict, baseline=number == 1)
            if run.failed:
                smallest, tried = self.shrink(run, attempt)
                return Found(run, smallest, tried)
        return None

    def shrink(self, failed: Run, attempt: Callable[[int, Dict[str, Any], str], Run]) -> "tuple[Run, int]":
        """Greedily the smallest plan that still fails: the first candidate the emulator proposes
        that fails again becomes the plan, until none does (or the budget is spent)."""
        current, tried = failed, 0
        while tried < self.shrink_budget:
            for candidate in self.control.shrink(current.plan):
                tried += 1
                run = attempt(failed.number, candidate, "")
                if run.failed:
                    current = run
                    break
                if tried >= self.shrink_budget:
                    return current, tried
            else:
                return current, tried
        return current, tried


def read_plan(path: str) -> Dict[str, Any]:
    """The plan of a bundle file (or of a file holding a plan alone)."""
    with open(path, "rb") as f:
        doc = json.load(f)
    if not isinstance(doc, dict):
        raise ValueError("%s holds no plan: a bundle or {\"perturbations\": [...]} was expected" % path)
    plan = doc.get("plan", doc)
    if not isinstance(plan, dict) or not isinstance(plan.get("perturbations"), list):
        raise ValueError("%s holds no plan: a bundle or {\"perturbations\": [...]} was expected" % path)
    return plan


def write_bundle(bundle: Mapping[str, Any], directory: str, name: str) -> str:
    """Writes a bundle to NAME.json in `directory` (made if missing) and returns its path; the
    same test's next failure replaces it."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, _file_name(name) + ".json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(bundle, f, indent=2, sort_keys=True)
        f.write("\n")
    return path


def plan_lines(plan: Mapping[str, Any]) -> List[str]:
    """A plan as lines, one perturbation each, in its JSON form."""
    items = plan.get("perturbations") or []
    if not items:
        return ["  (no perturbation: the run fails under no adversity at all)"]
    return ["  " + json.dumps(p, sort_keys=True, separators=(", ", ": ")) for p in items]


def failure_lines(verdict: Mapping[str, Any]) -> List[str]:
    """A verdict's failures as lines: kind, rule, reason and the journal entries it cites."""
    lines = []
    for f in verdict.get("failures") or []:
        what = f.get("rule") or f.get("kind", "")
        entries = " ".join("#%s" % e for e in f.get("entries") or [])
        lines.append("  %s: %s%s" % (what, f.get("reason", ""), (" " + entries) if entries else ""))
    return lines


def describe(found: Found, runs: int, seed: int, path: str, replay: str) -> str:
    """The message of an explore failure: which run failed, the smallest plan, the finding, and
    the file and command that replay it."""
    small = found.smallest
    n = len(small.plan.get("perturbations") or [])
    lines = ["mediagen-emulator explore: run %d of %d (seed %d) failed; the smallest plan that still fails has "
             "%d perturbation%s (%d shrink run%s):" % (found.first.number, runs, seed, n, "" if n == 1 else "s",
                                                       found.shrink_runs, "" if found.shrink_runs == 1 else "s")]
    lines += plan_lines(small.plan)
    lines.append("why it failed (tenant %s):" % small.tenant)
    lines += failure_lines(small.verdict) or ["  (the verdict names no failure)"]
    lines.append("the plan and the failing tenant are in %s; replay it: %s" % (path, replay))
    return "\n".join(lines)
