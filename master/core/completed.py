"""What the master keeps of ended things, bounded as Mesos bounds it.

Rules:
- Each framework keeps its last ``tasks_per_framework`` ended tasks (Mesos'
  ``--max_completed_tasks_per_framework``), oldest forgotten first; one busy framework cannot
  push every other framework's history out, as a single global bound did.
- The last ``frameworks`` removed frameworks are kept (``--max_completed_frameworks``); an
  older one is forgotten whole: its record and its ended tasks.
- What is kept answers reconciliation, a kill of an ended task, and an agent that reports a
  task the master declared ended (it is killed). What is forgotten is answered as unknown;
  an agent back from UNREACHABLE has its LOST tasks killed without the record (master.py).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator

from corral.master.core.records import TaskRecord


class Completed:
    def __init__(self, tasks_per_framework: int, frameworks: int) -> None:
        self.tasks_per_framework = tasks_per_framework
        self.frameworks = frameworks
        self._tasks: dict[str, OrderedDict[str, TaskRecord]] = {}  # framework -> task ->
        self._removed: OrderedDict[str, None] = OrderedDict()  # framework ids, oldest first

    def add(self, task: TaskRecord) -> None:
        kept = self._tasks.get(task.framework_id)
        if kept is None:
            kept = self._tasks[task.framework_id] = OrderedDict()
        kept[task.task_id] = task
        kept.move_to_end(task.task_id)
        while len(kept) > self.tasks_per_framework:
            kept.popitem(last=False)
        if not kept:
            del self._tasks[task.framework_id]

    def get(self, key: tuple[str, str]) -> TaskRecord | None:
        kept = self._tasks.get(key[0])
        return kept.get(key[1]) if kept is not None else None

    def __getitem__(self, key: tuple[str, str]) -> TaskRecord:
        task = self.get(key)
        if task is None:
            raise KeyError(key)
        return task

    def __contains__(self, key: tuple[str, str]) -> bool:
        return self.get(key) is not None

    def __len__(self) -> int:
        return sum(len(kept) for kept in self._tasks.values())

    def values(self) -> Iterator[TaskRecord]:
        for kept in self._tasks.values():
            yield from kept.values()

    def of_framework(self, framework_id: str) -> Iterator[TaskRecord]:
        yield from self._tasks.get(framework_id, {}).values()

    def framework_removed(self, framework_id: str) -> list[str]:
        """Count a removal; returns the removed frameworks now past the bound, whose ended
        tasks are forgotten here and whose records the caller drops."""
        self._removed[framework_id] = None
        self._removed.move_to_end(framework_id)
        forgotten: list[str] = []
        while len(self._removed) > self.frameworks:
            old, _ = self._removed.popitem(last=False)
            self._tasks.pop(old, None)
            forgotten.append(old)
        return forgotten

    def clear(self) -> None:
        """Forget every ended task (tests: what an agent back from a long partition meets)."""
        self._tasks.clear()
