"""Revocable resources on the agent: the estimate it offers and the QoS controller that takes
them back (Mesos' resource estimator and QoS controller). Pure.

The rules:
1. What its own tasks were allocated but do not use is lendable: per live, non-revocable task,
   its request less its measured usage (at least 0; a task not measured yet lends nothing),
   for cpus and mem. The agent offers that less a safety margin (``--revocable-margin``, a
   fraction): the estimate, reported with every measurement. The master offers the estimate
   less what revocable tasks hold as revocable offers (master/core/revocable.py).
2. When usage rises and the revocable tasks hold more memory than is lendable now (the
   margin is the buffer that absorbs small rises), the controller kills revocable tasks,
   biggest first (then by task id), until what is left fits: reason
   REVOCABLE_RESOURCES_RECLAIMED. Non-revocable tasks are never touched for this.
3. Cpus are lent the same way but never reclaimed by a kill: a cpu shortage slows tasks down,
   it does not kill the machine.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from corral.resources import EPSILON


@dataclass(frozen=True, slots=True)
class Lender:
    """A live, non-revocable task: what it requested and what it uses (None: not measured)."""

    cpus: float
    mem: float
    used_cpus: float | None
    used_mem: float | None


@dataclass(frozen=True, slots=True)
class Borrower:
    """A live revocable task (not already being killed): what it holds."""

    task_id: str
    cpus: float
    mem: float
    framework_id: str = ""  # with task_id, the task's key on the agent


def lendable(lenders: Sequence[Lender]) -> tuple[float, float]:
    """Rule 1 before the margin: (cpus, mem) allocated and unused."""
    cpus = mem = 0.0
    for t in lenders:
        if t.used_cpus is not None:
            cpus += max(0.0, t.cpus - t.used_cpus)
        if t.used_mem is not None:
            mem += max(0.0, t.mem - t.used_mem)
    return cpus, mem


def estimate(lenders: Sequence[Lender], margin: float) -> tuple[float, float]:
    """Rule 1: what the agent offers as revocable."""
    cpus, mem = lendable(lenders)
    keep = max(0.0, 1.0 - margin)
    return cpus * keep, mem * keep


def reclaim(lenders: Sequence[Lender], borrowers: Sequence[Borrower]) -> list[Borrower]:
    """Rule 2: the revocable tasks to kill, in order."""
    _, room = lendable(lenders)
    held = sum(b.mem for b in borrowers)
    out: list[Borrower] = []
    for b in sorted(borrowers, key=lambda b: (-b.mem, b.task_id, b.framework_id)):
        if held <= room + EPSILON:
            break
        out.append(b)
        held -= b.mem
    return out
