"""The core's ``tasks`` component: every live task's place in the indexes, and every tally
derived from live tasks, behind ``add`` and ``remove``.

What it owns (nothing else writes them; the records carry the two dicts because handlers read
them there):
- each framework's ``tasks`` (by task id) and each agent's ``tasks`` (by framework and task
  id, through ``AgentRecord.add_task``/``pop_task``/``clear_tasks``, which move its
  ``tasks_version``);
- ``sums`` (task_sums.py): per agent and class value, what live tasks hold (preemption's
  first test); an agent's row is added with the agent (``add_agent``) and given back with it;
- ``held`` (principal_held.py): per principal, what its frameworks' live tasks hold (the ACLs'
  caps, authz.py rule 4);
- ``live_classes``: live tasks per class name (a preemption pass with nobody below a demand's
  priority looks no further);
- each framework's ``demand_tasks``: live tasks per demand name (demands.py's unmet counts).

Rules:
1. A task is live in the core from the event it is accepted or taken in from an agent's report
   (``add``, ``add_many``) to the one it ends or is forgotten in (``remove``,
   ``forget_agent``); each of those moves every index and tally above, once. The tallies of
   many tasks move once per kind of task (class, resources, demand): an accept's at once
   (``add_many``), a status batch's at the end of its event (``remove`` into an
   ``EndedBatch``, then ``count_removed``), before anything reads them.
2. A task counts under its class's value at the time; when a class's value changes every live
   task is counted again (``recount``).
3. Whatever moves a framework's demand counts marks it in ``demands_moved`` (the core's set,
   handed in: master.py rule 6 re-syncs the allocator after the event).
4. ``validate`` recomputes every tally from the two indexes and checks the indexes agree.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from corral.master.allocator.interface import Scalars
from corral.master.core.invariants import close
from corral.master.core.principal_held import PrincipalHeld
from corral.master.core.task_sums import TaskSums

if TYPE_CHECKING:
    from corral.master.core.priority_table import PriorityTable
    from corral.master.core.records import AgentRecord, FrameworkRecord, TaskRecord


@dataclass
class EndedBatch:
    """What ending many tasks in one event leaves to its end (statuses.py rule 5): the
    resources going back, (framework id, agent id, scalars) for one ``recover_many``, and the
    ended tasks' tallies (rule 1)."""

    returns: list[tuple[str, str, Scalars]] = field(default_factory=list)
    uncounted: list[tuple[FrameworkRecord, TaskRecord]] = field(default_factory=list)


class TaskTable:
    def __init__(self, priority: PriorityTable, demands_moved: set[str]) -> None:
        self._priority = priority
        self._demands_moved = demands_moved  # rule 3
        self.sums = TaskSums()
        self.held = PrincipalHeld()
        self.live_classes: Counter[str] = Counter()

    # ------------------------------------------------------------------ tasks

    def add(self, fw: FrameworkRecord, agent: AgentRecord, task: TaskRecord) -> None:
        """Rule 1: the task is live on ``agent`` for ``fw``."""
        self.add_many(fw, agent, (task,))

    def add_many(
        self, fw: FrameworkRecord, agent: AgentRecord, tasks: Sequence[TaskRecord]
    ) -> None:
        """Rule 1 for the tasks of one accept, their tallies moved once per kind."""
        fw_id = fw.framework_id
        for task in tasks:
            fw.tasks[task.task_id] = task
            agent.add_task((fw_id, task.task_id), task)
        self._count_kinds(((fw, task) for task in tasks), +1)

    def remove(
        self,
        fw: FrameworkRecord | None,
        agent: AgentRecord | None,
        task: TaskRecord,
        batch: EndedBatch | None = None,
    ) -> bool:
        """Rule 1: the task ended (its tallies moved by ``count_removed`` when a ``batch`` is
        given). True when its agent still held it (its resources, ports and the agent's
        maintenance are then the caller's to settle)."""
        on_agent = (
            agent is not None and agent.pop_task((task.framework_id, task.task_id)) is not None
        )
        if fw is not None and fw.tasks.pop(task.task_id, None) is not None:
            if batch is None:
                self._count(fw, task, -1)
            else:
                batch.uncounted.append((fw, task))
        return on_agent

    def count_removed(self, batch: EndedBatch) -> None:
        """Rule 1: the tallies of the tasks ``remove`` put in ``batch``."""
        self._count_kinds(batch.uncounted, -1)
        batch.uncounted = []

    def forget_agent(self, agent: AgentRecord, frameworks: Mapping[str, FrameworkRecord]) -> int:
        """Rule 1 for every task of an agent the core forgets (pruning.py); how many tasks it
        held. (Its row in ``sums`` goes with the agent: agent_table.py.)"""
        for (fw_id, task_id), task in agent.tasks.items():
            fw = frameworks.get(fw_id)
            if fw is not None and fw.tasks.pop(task_id, None) is not None:
                self._count(fw, task, -1)
        n = len(agent.tasks)
        agent.clear_tasks()
        return n

    def held_by(self, fw: FrameworkRecord, principal: str) -> None:
        """The framework's live tasks count towards ``principal`` from now on, no longer
        towards its spec's ``held_by`` (authz.py rule 4; subscriptions.py): a placeholder's
        owner learned from a report, (a principal a placeholder never had) the principal that
        subscribes it on a plain-text master, or the owner a service subscribes it for."""
        for task in fw.tasks.values():
            if not task.state.terminal:
                scalars = task.spec.resources.scalars()
                self.held.add(fw.spec.held_by, scalars, -1)
                self.held.add(principal, scalars, +1)

    def _count_kinds(self, tasks: Iterable[tuple[FrameworkRecord, TaskRecord]], sign: int) -> None:
        """``_count`` once per kind of task (framework, agent, class, resources, demand) with
        ``sign`` times its number: an accept's or a status batch's tasks are mostly one kind.
        The resources by identity: the decoder hands equal ones out as one object, and two
        equal objects are two kinds, counted right all the same."""
        kinds: dict[tuple[str, str, str, int, str], tuple[FrameworkRecord, TaskRecord, int]]
        kinds = {}
        for fw, task in tasks:
            spec = task.spec
            kind = (
                fw.framework_id,
                task.agent_id,
                spec.priority_class,
                id(spec.resources),
                spec.demand,
            )
            seen = kinds.get(kind)
            kinds[kind] = (fw, task, 1) if seen is None else (fw, seen[1], seen[2] + 1)
        for fw, task, n in kinds.values():
            self._count(fw, task, sign * n)

    def _count(self, fw: FrameworkRecord, task: TaskRecord, delta: int) -> None:
        spec = task.spec
        self.live_classes[spec.priority_class] += delta
        scalars = spec.resources.scalars()
        self.sums.task(task.agent_id, self._priority.value(spec.priority_class), scalars, delta)
        self.held.add(fw.spec.held_by, scalars, delta)
        name = spec.demand
        if not name:
            return
        left = fw.demand_tasks.get(name, 0) + delta
        fw.demand_tasks_version += 1
        if left > 0:
            fw.demand_tasks[name] = left
        else:
            fw.demand_tasks.pop(name, None)
        if fw.wants_by_demand:
            self._demands_moved.add(fw.framework_id)

    # ----------------------------------------------------------------- agents

    def add_agent(self, agent_id: str, total: Scalars) -> None:
        """The agent's row in ``sums`` (again when its resources changed)."""
        self.sums.add_agent(agent_id, total)

    def remove_agent(self, agent_id: str) -> None:
        self.sums.remove_agent(agent_id)

    def recount(self, frameworks: Iterable[FrameworkRecord]) -> None:
        """Rule 2: a class's value or the global default changed."""
        self.sums.rebuild(
            (t.agent_id, self._priority.value(t.spec.priority_class), t.spec.resources.scalars())
            for fw in frameworks
            for t in fw.tasks.values()
            if not t.state.terminal
        )

    # --------------------------------------------------------------- validate

    def validate(
        self, frameworks: Mapping[str, FrameworkRecord], agents: Mapping[str, AgentRecord]
    ) -> list[str]:
        """Rule 4, as the faults found."""
        faults = self._indexes(frameworks, agents)
        faults += self._demand_tasks(frameworks)
        faults += self._sums(frameworks, agents)
        faults += self._held(frameworks)
        faults += self._live_classes(frameworks)
        return faults

    @staticmethod
    def _indexes(
        frameworks: Mapping[str, FrameworkRecord], agents: Mapping[str, AgentRecord]
    ) -> list[str]:
        """A live task is the same record in its framework's and its agent's index, and live;
        one with a cause to be killed for is being killed."""
        faults: list[str] = []
        for fw in frameworks.values():
            for task_id, task in fw.tasks.items():
                if task.task_id != task_id:
                    faults.append(f"task {task_id} is filed under another id")
                if task.state.terminal:
                    faults.append(f"ended task {task_id} still live ({task.state})")
                agent = agents.get(task.agent_id)
                if agent is None:
                    faults.append(f"task {task_id} on unknown agent {task.agent_id}")
                    continue
                if agent.tasks.get((fw.framework_id, task_id)) is not task:
                    faults.append(f"task {task_id} missing from agent {task.agent_id}'s index")
                # A cause to kill it for (a framework's preemption, an operator, a drain) comes
                # with the kill (framework_calls.py rule 4, kills.py).
                if not task.kill_requested and task.killed_for is not None:
                    faults.append(
                        f"task {task_id} has a cause to be killed for but no kill was asked"
                    )
        for agent in agents.values():
            for (fw_id, task_id), task in agent.tasks.items():
                owner = frameworks.get(fw_id)
                if owner is None or owner.tasks.get(task_id) is not task:
                    faults.append(
                        f"agent {agent.agent_id} holds task {task_id} its framework does not"
                    )
        return faults

    @staticmethod
    def _demand_tasks(frameworks: Mapping[str, FrameworkRecord]) -> list[str]:
        faults: list[str] = []
        for fw in frameworks.values():
            counted: dict[str, int] = {}
            for task in fw.tasks.values():
                if task.spec.demand:
                    counted[task.spec.demand] = counted.get(task.spec.demand, 0) + 1
            if counted != fw.demand_tasks:
                faults.append(
                    f"framework {fw.framework_id} counts {fw.demand_tasks} tasks per demand, "
                    f"its live tasks name {counted}"
                )
        return faults

    def _sums(
        self, frameworks: Mapping[str, FrameworkRecord], agents: Mapping[str, AgentRecord]
    ) -> list[str]:
        """task_sums.py: every agent has a row holding its resources, and the sums per class
        value are its live tasks' (as a recount would make them)."""
        sums = self.sums
        if set(sums.rows) != set(agents):
            return ["task sums' agent rows differ from the agents"]
        faults: list[str] = []
        for aid, agent in agents.items():
            row = sums.rows[aid]
            if tuple(sums.totals[row]) != agent.spec.resources.scalars():
                faults.append(
                    f"task sums hold {tuple(sums.totals[row])} for agent {aid}, its resources "
                    f"are {agent.spec.resources.scalars()}"
                )
        expected: dict[tuple[str, int], list[float]] = {}
        for fw in frameworks.values():
            for t in fw.tasks.values():
                if t.state.terminal or t.agent_id not in sums.rows:
                    continue
                key = (t.agent_id, self._priority.value(t.spec.priority_class))
                _add(expected.setdefault(key, [0.0, 0.0, 0.0, 0.0]), t.spec.resources.scalars())
        for value, arr in sums.by_value.items():
            for aid, row in sums.rows.items():
                want = expected.pop((aid, value), [0.0, 0.0, 0.0, 0.0])
                if not close(arr[row], want):
                    faults.append(
                        f"task sums hold {list(arr[row])} for agent {aid} at value {value}, "
                        f"its live tasks {want}"
                    )
        left = {k: v for k, v in expected.items() if any(x > 0 for x in v)}
        if left:
            faults.append(f"live tasks the task sums do not count: {left}")
        return faults

    def _held(self, frameworks: Mapping[str, FrameworkRecord]) -> list[str]:
        """authz.py rule 4: what each principal's tasks hold is its frameworks' live tasks."""
        expected: dict[str, list[float]] = {}
        for fw in frameworks.values():
            if not fw.spec.held_by:
                continue
            for t in fw.tasks.values():
                if not t.state.terminal:
                    _add(
                        expected.setdefault(fw.spec.held_by, [0.0, 0.0, 0.0, 0.0]),
                        t.spec.resources.scalars(),
                    )
        faults: list[str] = []
        for principal in set(expected) | set(self.held.held):
            have = self.held.of(principal)
            want = expected.get(principal, [0.0, 0.0, 0.0, 0.0])
            if not close(have, want):
                faults.append(
                    f"principal {principal}'s tasks hold {want}, the sums say {list(have)}"
                )
        return faults

    def _live_classes(self, frameworks: Mapping[str, FrameworkRecord]) -> list[str]:
        counted = Counter(
            t.spec.priority_class for fw in frameworks.values() for t in fw.tasks.values()
        )
        have = +self.live_classes  # without the classes counted down to 0
        if have != counted:
            return [
                f"live tasks per class counted {dict(have)}, the live tasks are {dict(counted)}"
            ]
        return []


def _add(into: list[float], scalars: Iterable[float]) -> None:
    for k, x in enumerate(scalars):
        into[k] += x
