"""Disruption budgets as data (Kubernetes' PodDisruptionBudget, Marathon's minimum health): the
master's ``--disruption-budgets`` file parsed and checked, and how many disruptions a budget
allows now (``health``, ``allowed``). Drains and the autoscaler's removals are refused past it
(simulation.py, rule 6, ``budget_denial``); preemption counts the victims past it and prefers
fewer (preemption.py, rule 4).

Apart from simulation.py so that the master's configuration (config.py) can hold budgets without
importing the what-if and, through it, the handlers.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from corral.tasks import TaskState

if TYPE_CHECKING:
    from corral.master.core.records import FrameworkRecord, TaskRecord


@dataclass(frozen=True, slots=True)
class DisruptionBudget:
    """Rule 6's budget; exactly one of ``min_available`` and ``max_unavailable`` is set."""

    name: str
    labels: tuple[tuple[str, str], ...] = ()
    framework: str = ""  # a framework's name; empty: any
    min_available: int | None = None
    max_unavailable: int | None = None

    def selects(self, fw: FrameworkRecord, labels: Any) -> bool:
        if self.framework and fw.spec.name != self.framework:
            return False
        return all(labels is not None and labels.get(k) == v for k, v in self.labels)

    def __str__(self) -> str:
        if self.min_available is not None:
            return f"{self.name} (min_available {self.min_available})"
        return f"{self.name} (max_unavailable {self.max_unavailable})"


def health(
    b: DisruptionBudget, frameworks: Iterable[FrameworkRecord]
) -> tuple[int, list[TaskRecord]]:
    """How many live tasks ``b`` selects, and those of them healthy (RUNNING, no kill asked)."""
    selected = 0
    healthy: list[TaskRecord] = []
    for fw in frameworks:
        if b.framework and fw.spec.name != b.framework:
            continue
        for t in fw.tasks.values():
            if t.state.terminal or not b.selects(fw, getattr(t.spec.wire, "labels", None)):
                continue
            selected += 1
            if t.state is TaskState.RUNNING and not t.kill_requested:
                healthy.append(t)
    return selected, healthy


def allowed(b: DisruptionBudget, selected: int, healthy: int) -> int:
    """How many more of its healthy tasks ``b`` lets go now (below 0: already broken)."""
    if b.min_available is not None:
        return healthy - b.min_available
    assert b.max_unavailable is not None
    return b.max_unavailable - (selected - healthy)


class BudgetError(ValueError):
    """A budget that cannot be used; the text names it and the problem."""


def budgets_from_json(doc: Any) -> tuple[DisruptionBudget, ...]:
    """``[{"name", "selector": {"labels": {..}, "app": NAME, "framework": NAME},
    "min_available": N | "max_unavailable": N}, ...]``."""
    if not isinstance(doc, list):
        raise BudgetError("disruption budgets must be a list")
    out: list[DisruptionBudget] = []
    for i, b in enumerate(doc):
        if not isinstance(b, dict) or not isinstance(b.get("name"), str) or not b["name"]:
            raise BudgetError(f"budget {i}: a mapping with a name")
        where = f"budget {b['name']}"
        unknown = sorted(set(b) - {"name", "selector", "min_available", "max_unavailable"})
        if unknown:
            raise BudgetError(f"{where}: unknown key {unknown[0]!r}")
        sel = b.get("selector", {})
        if not isinstance(sel, dict) or set(sel) - {"labels", "app", "framework"}:
            raise BudgetError(f"{where}: selector has labels, app and/or framework")
        labels = dict(sel.get("labels", {}))
        if "app" in sel:
            labels["app"] = sel["app"]
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items()):
            raise BudgetError(f"{where}: labels are strings")
        framework = sel.get("framework", "")
        if not isinstance(framework, str) or not (labels or framework):
            raise BudgetError(f"{where}: the selector selects nothing")
        bounds = [k for k in ("min_available", "max_unavailable") if k in b]
        if len(bounds) != 1:
            raise BudgetError(f"{where}: exactly one of min_available and max_unavailable")
        n = b[bounds[0]]
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise BudgetError(f"{where}: {bounds[0]} must be a whole number >= 0")
        out.append(
            DisruptionBudget(
                b["name"],
                tuple(sorted(labels.items())),
                framework,
                n if bounds[0] == "min_available" else None,
                n if bounds[0] == "max_unavailable" else None,
            )
        )
    if len({b.name for b in out}) != len(out):
        raise BudgetError("two budgets share a name")
    return tuple(out)
