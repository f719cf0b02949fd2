"""Per agent, the resources its live tasks hold, by their class's value, kept as arrays as tasks
start and end: preemption's first test for a demand is then one array expression over every
agent instead of a walk (demand_work.py rule 4).

Rules:
1. Every agent record has a row (``add_agent``), given back when the record is forgotten;
   ``totals`` holds each row's resources.
2. A task counts in ``by_value[v]`` on its agent's row from the event it becomes live in the
   master (accepted, or taken in from an agent's report) to the one it ends in (``TaskTable.add``
   / ``remove``, task_table.py), under its class's value then. A change of a class's value, or
   of the global default, recounts every task (``rebuild``): operators do it rarely.
3. ``could_hold(shape, value)``: the rows where a task of ``shape`` would fit if every task of a
   class below ``value`` were gone. Necessary for preemption to place it there, not sufficient
   (offers, holds, taints and constraints are the search's to check).
4. Counting is deferred: ``task`` appends the count to a list, and the arrays take the list
   (``by_value``) when they are read: by ``could_hold``, a row's removal (before the row can
   be another agent's), a check, or once MAX_DEFERRED counts are waiting. ``task`` runs twice
   per task (it starts, it ends) on the launch path, where an array row update (~2.5 us of
   numpy call overhead each) was 8 % of the master core's time per launch; reads come from
   preemption and are rare.
5. ``could_hold`` keeps, per class value asked, the room (``totals`` less the tasks of that class
   and above) and its largest value per resource, until the arrays change (``_changed``: deferred
   counts taken, an agent's row added, changed or removed, a rebuild). A shape larger in some
   resource than every row's room there fits no row: that answer costs no pass over the
   agents (issue #48: 64 searches a tick for demands that fit nowhere, each an expression over
   10,000 rows, were a third of preemption's pass).
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import chain
from operator import itemgetter
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from corral.master.allocator.interface import Scalars
from corral.resources import fits_rows

if TYPE_CHECKING:
    from corral.master.core.records import AgentRecord

F64 = npt.NDArray[np.float64]

# Rule 4: counts kept before the arrays take them anyway (memory stays bounded without reads;
# taking 100,000 costs ~40 ms, 0.4 us a count).
MAX_DEFERRED = 100_000


class TaskSums:
    def __init__(self) -> None:
        self.rows: dict[str, int] = {}
        self._free_rows: list[int] = []
        self.ids: npt.NDArray[np.object_] = np.empty(0, dtype=object)
        self.totals: F64 = np.zeros((0, 4))
        self._by_value: dict[int, F64] = {}
        # Rule 4: (row, value, scalars, delta) of each count since the last read, in order.
        self._deferred: list[tuple[int, int, Scalars, int]] = []
        # Rule 5: class value -> (room per row, its largest value per resource as one row).
        self._rooms: dict[int, tuple[F64, F64]] = {}

    def _changed(self) -> None:
        """The arrays moved: rule 5's kept rooms no longer hold."""
        if self._rooms:
            self._rooms = {}

    @property
    def by_value(self) -> dict[int, F64]:
        """Per class value, each row's live tasks' resources (rule 2), deferred counts taken."""
        if self._deferred:
            self._take_deferred()
        return self._by_value

    def _take_deferred(self) -> None:
        self._changed()
        deferred, self._deferred = self._deferred, []
        n = len(deferred)
        # fromiter over item getters: half the time of np.array over zip(*deferred).
        at = np.fromiter(map(itemgetter(0), deferred), dtype=np.intp, count=n)
        by = np.fromiter(map(itemgetter(1), deferred), dtype=np.int64, count=n)
        flat = chain.from_iterable(map(itemgetter(2), deferred))
        amounts = np.fromiter(flat, dtype=np.float64, count=4 * n).reshape(n, 4)
        amounts *= np.fromiter(map(itemgetter(3), deferred), dtype=np.float64, count=n)[:, None]
        for value in np.unique(by).tolist():
            arr = self._by_value.get(value)
            if arr is None:
                arr = self._by_value[value] = np.zeros((len(self.ids), 4))
            mask = by == value
            np.add.at(arr, at[mask], amounts[mask])

    def _grow(self, n: int) -> None:
        self._changed()
        size = max(16, 2 * len(self.ids), n)
        ids = np.empty(size, dtype=object)
        ids[: len(self.ids)] = self.ids
        self.ids = ids
        self.totals = np.vstack([self.totals, np.zeros((size - len(self.totals), 4))])
        for v, arr in self._by_value.items():  # deferred rows are below the old size
            self._by_value[v] = np.vstack([arr, np.zeros((size - len(arr), 4))])

    def add_agent(self, agent_id: str, total: Scalars) -> None:
        """Rule 1 (again for an agent whose resources changed)."""
        self._changed()
        row = self.rows.get(agent_id)
        if row is None:
            if self._free_rows:
                row = self._free_rows.pop()
            else:
                row = len(self.rows)
                if row >= len(self.ids):
                    self._grow(row + 1)
            self.rows[agent_id] = row
            self.ids[row] = agent_id
        self.totals[row] = total

    def remove_agent(self, agent_id: str) -> None:
        row = self.rows.pop(agent_id, None)
        if row is None:
            return
        self._changed()
        self.ids[row] = None
        self.totals[row] = 0.0
        for arr in self.by_value.values():  # deferred counts taken first: the row is reused
            arr[row] = 0.0
        self._free_rows.append(row)

    def task(self, agent_id: str, value: int, scalars: Scalars, delta: int) -> None:
        """Rule 2."""
        row = self.rows.get(agent_id)
        if row is None:
            return
        self._deferred.append((row, value, scalars, delta))
        if len(self._deferred) >= MAX_DEFERRED:
            self._take_deferred()

    def rebuild(self, tasks: Iterable[tuple[str, int, Scalars]]) -> None:
        """Rule 2: count (agent id, value, scalars) of every live task again."""
        self._changed()
        self._by_value, self._deferred = {}, []
        for agent_id, value, scalars in tasks:
            self.task(agent_id, value, scalars, +1)

    def could_hold(self, shape: Scalars, value: int) -> list[str]:
        """Rule 3, as agent ids in id order."""
        if not self.rows:
            return []
        by_value = self.by_value  # rule 4: the deferred counts taken (rule 5's rooms dropped)
        kept = self._rooms.get(value)
        if kept is None:
            room = self.totals.copy()
            for v, arr in by_value.items():
                if v >= value:
                    room -= arr
            kept = self._rooms[value] = (room, room.max(axis=0, keepdims=True))
        room, largest = kept
        # Rule 5: ``fits`` is monotone in the room, so a row that fits fits the largest row too.
        if not fits_rows(largest, shape)[0]:
            return []
        ok = fits_rows(room, shape)
        ids = self.ids[np.flatnonzero(ok)]
        return sorted(str(i) for i in ids if i is not None)

    def of(self, agent: AgentRecord) -> int:
        return self.rows[agent.agent_id]
