# SPDX-License-Identifier: GPL-2.0
"""make check's steps: their order, what each needs, and the time budget.

A plan is a list of steps in the order make check runs them.  A step
names the steps it needs (their results or what they build); the order
must keep every step after what it needs (order() checks it).  Steps
marked background start at once under nice and take what the others
leave of the CPUs (the debug kernel's build, the Debian root); the rest
run one after the other, since every guest under TCG keeps more than one
of the two CPUs busy (three debug guests side by side took 1,310 s
against 1,177 s one by one).  schedule() lays a plan out on a machine
of N CPUs from each step's estimate, which is what the budget report
compares the run with.
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field, replace
from typing import Callable, Dict, List, Optional, Sequence, Tuple

# make check must end within the hour on a fresh 2-CPU machine.
BUDGET_S = 3600


class PlanError(Exception):
    pass


@dataclass
class Step:
    name: str
    needs: Tuple[str, ...] = ()
    # Seconds it took in the reference run (Documentation/results/check.txt)
    # on a quiet 2-CPU machine (a background step: beside the others).
    estimate: int = 60
    background: bool = False
    # "main", or "side": a host check no guest needs, which writes nothing
    # the main lane reads, run beside it (rig.execute).
    lane: str = "main"
    # What runs it; what it returns is not used (the runner keeps results).
    action: Optional[Callable[[], object]] = field(default=None,
                                                   compare=False, repr=False)


def order(steps: Sequence[Step]) -> List[Step]:
    """The steps in the plan's order, checked: unique names, every need a
    step of the plan that comes before (or runs in the background)."""
    seen: Dict[str, Step] = {}
    for s in steps:
        if s.name in seen:
            raise PlanError(f"two steps named {s.name}")
        for n in s.needs:
            if n not in seen:
                known = n in {t.name for t in steps}
                raise PlanError(
                    f"{s.name} needs {n}, which "
                    + ("comes after it" if known else "is not in the plan"))
        seen[s.name] = s
    return list(steps)


@dataclass
class Slot:
    name: str
    start: int
    end: int


def schedule(steps: Sequence[Step], cpus: int = 2,
             lanes: int = 2) -> List[Slot]:
    """Lay the plan out in time on CPUS CPUs: background steps from the
    start, or from the end of the background steps they need, beside the
    rest (their estimates were measured so); the main lane's steps one
    after the other, each once its needs are done; with two LANES, the
    side lane's likewise, from the end of the background steps that
    need none (rig.execute), else in the main lane.  With more than two CPUs
    a background step gets the CPUs beyond two and ends sooner."""
    plan = order(steps)
    end: Dict[str, int] = {}
    slots: List[Slot] = []
    for s in plan:
        if s.background:
            # One background step may wait for another (the kernel
            # builds share a lock).
            start = max([end[n] for n in s.needs if n in end], default=0)
            end[s.name] = start + s.estimate * 2 // max(cpus, 2)
            slots.append(Slot(s.name, start, end[s.name]))
    # The side lane waits for the debug kernel's build, not for what is
    # queued behind it (rig.driver).
    side_t = max((end[s.name] for s in plan if s.background and not s.needs),
                 default=0)
    lane_t = {"main": 0, "side": side_t}
    for s in plan:
        if s.background:
            continue
        lane = s.lane if lanes > 1 else "main"
        start = max([lane_t[lane]] + [end[n] for n in s.needs])
        end[s.name] = start + s.estimate
        slots.append(Slot(s.name, start, end[s.name]))
        lane_t[lane] = end[s.name]
    return slots


def makespan(slots: Sequence[Slot]) -> int:
    return max((s.end for s in slots), default=0)


def budget_report(steps: Sequence[Step], took: Dict[str, int],
                  total: int, budget: Optional[int] = BUDGET_S) -> List[str]:
    """What the run took against the plan: its total against the budget,
    and the steps that took more than twice their estimate and a minute
    more (a regression to look at; the run passes or fails on its tests
    alone, never on its time).  BUDGET None: none (check-long)."""
    planned = makespan(schedule(steps))
    of = f" of the {budget} s budget" if budget is not None else ""
    lines = [f"time: {total} s{of} "
             f"(planned {planned} s from the reference run's step times)"]
    for s in steps:
        t = took.get(s.name)
        if t is not None and t > 2 * s.estimate and t > s.estimate + 60:
            lines.append(f"  {s.name}: {t} s, estimate {s.estimate} s")
    if budget is not None and total > budget:
        lines.append(f"  over budget by {total - budget} s: "
                     "see Documentation/testing.rst, \"The time budget\"")
    return lines


def select(steps: Sequence[Step], patterns: Sequence[str]) -> List[Step]:
    """The steps whose names match one of PATTERNS (shell globs), with the
    background steps they need, directly or through other steps; none but
    those (the others' results must be there already, e.g. built by an
    earlier run).  No patterns: all of them."""
    if not patterns:
        return list(steps)
    by = {s.name: s for s in steps}
    chosen = {s.name for s in steps
              if any(fnmatch.fnmatchcase(s.name, p) for p in patterns)}
    seen, todo = set(chosen), list(chosen)
    while todo:
        for n in by[todo.pop()].needs:
            if n in seen:
                continue
            seen.add(n)
            todo.append(n)
            if by[n].background:
                chosen.add(n)
    return [replace(s, needs=tuple(n for n in s.needs if n in chosen))
            for s in steps if s.name in chosen]
