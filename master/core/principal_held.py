"""What each principal's tasks hold, for the ACLs' caps (authz.py rule 4): the task table's
``held`` (task_table.py)."""

from __future__ import annotations

from corral.resources import SCALARS


class PrincipalHeld:
    """Per principal, the scalars its live tasks hold (all its frameworks), kept as tasks are
    accepted and end (``TaskTable.add`` / ``remove``)."""

    def __init__(self) -> None:
        self.held: dict[str, list[float]] = {}

    def add(self, principal: str, scalars: tuple[float, ...], delta: int) -> None:
        # Twice per task (it starts, it ends): kept to a few additions.
        if not principal:
            return
        row = self.held.get(principal)
        if row is None:
            row = self.held[principal] = [0.0, 0.0, 0.0, 0.0]
        cpus, mem, disk, gpus = scalars
        row[0] += delta * cpus
        row[1] += delta * mem
        row[2] += delta * disk
        row[3] += delta * gpus

    def of(self, principal: str) -> tuple[float, ...]:
        row = self.held.get(principal)
        return tuple(row) if row is not None else (0.0,) * len(SCALARS)
