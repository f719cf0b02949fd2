"""The core's ``agent_table`` component: the agents the core knows, each one's membership state,
and what is derived from the states, behind ``add``, ``move`` and ``remove``.

What it owns (nothing else writes them; handlers read ``agents`` as ``core.agents``):
- ``agents``: every agent record by id, from its first registration (or the registry's record
  after a restart) until it is deleted or pruned;
- each agent's ``state`` and ``unreachable_at`` (membership.py's transitions);
- each agent's ``connection``, the stream it is on (None while it has none): set by ``connect``
  and cleared by ``disconnect``; ``connected``: how many agents have one (a count over every
  agent each tick was 2.5 % of a master registering 50,000 agents);
- ``by_state``: how many agents are in each state (the ``/metrics`` gauges read it: a count
  over 50,000 agents per scrape was ~5 ms); ``recovering``, how many are RECOVERING
  (reconcile.py rule 8 holds questions while any is), is read from it;
- ``unreachable``: the UNREACHABLE agents' ids with since when, oldest first (pruning.py's
  order).
Each agent also has its row in the task table's sums from ``add`` to ``remove``.

Rules:
1. An agent enters with ``add`` (a registration) or ``recovered`` (the registry's records,
   whose UNREACHABLE agents enter the order oldest first), and leaves with ``remove``.
2. Its state changes only through ``move``, checked against AGENT_TRANSITIONS; entering
   UNREACHABLE stamps ``unreachable_at`` and appends it to the order (the newest), leaving it
   clears both; ``by_state`` counts it out of the old state and into the new.
3. ``validate`` recounts the agents per state and the order from the records.
4. An agent's stream changes only through ``connect`` (a registration on a stream) and
   ``disconnect`` (its stream closed, or closed by the master); ``connected`` counts the
   agents with one, from ``add`` (an agent registers with its stream) to ``remove``, and
   ``validate`` recounts it.
"""

from __future__ import annotations

from collections.abc import Iterable

from corral.master.core.records import AgentRecord
from corral.master.core.states import AGENT_TRANSITIONS, AgentState, check
from corral.master.core.task_table import TaskTable


class AgentTable:
    def __init__(self, tasks: TaskTable) -> None:
        self._tasks = tasks
        self.agents: dict[str, AgentRecord] = {}
        self.by_state = dict.fromkeys(AgentState, 0)
        self.unreachable: dict[str, float] = {}
        self.connected = 0  # agents with a stream (rule 4)

    @property
    def recovering(self) -> int:
        return self.by_state[AgentState.RECOVERING]

    @property
    def heartbeating(self) -> int:
        """The agents whose heartbeats the interval spreads (ticks.py rule 3): the ACTIVE,
        connected or expected back (a stream that broke is an agent's to re-open until its
        timeout makes it UNREACHABLE), and the RECOVERING, which a restarted master expects
        back. An agent heartbeats only ACTIVE: one heard from UNREACHABLE is asked to
        re-register. Counting only the connected, a leader taking over re-told each returning
        agent its interval 2.3 times on average (shorter while few were back, then longer
        again): 115,000 messages for 50,000 agents; and a partition cutting half of 10,000
        agents re-told the other half a shorter interval at once and every agent ~3.6 times
        as they came back: 18,099 messages (issue #48)."""
        return self.by_state[AgentState.ACTIVE] + self.by_state[AgentState.RECOVERING]

    def add(self, agent: AgentRecord) -> None:
        """Rule 1: a registration."""
        self.agents[agent.agent_id] = agent
        self._tasks.add_agent(agent.agent_id, agent.spec.resources.scalars())
        self._counted(agent)
        if agent.connection is not None:
            self.connected += 1

    def recovered(self, agents: Iterable[AgentRecord]) -> None:
        """Rule 1: the registry's records, in its order; the UNREACHABLE ones join the pruning
        order oldest first."""
        gone: list[AgentRecord] = []
        for agent in agents:
            self.agents[agent.agent_id] = agent
            self._tasks.add_agent(agent.agent_id, agent.spec.resources.scalars())
            if agent.connection is not None:
                self.connected += 1
            if agent.state is AgentState.UNREACHABLE:
                gone.append(agent)
            else:
                self._counted(agent)
        for agent in sorted(gone, key=_since):
            self._counted(agent)

    def resized(self, agent: AgentRecord) -> None:
        """The agent re-registered, perhaps with other resources: its row follows them."""
        self._tasks.add_agent(agent.agent_id, agent.spec.resources.scalars())

    def move(self, agent: AgentRecord, state: AgentState, now: float) -> AgentState:
        """Rule 2; the state it was in."""
        was = agent.state
        if state is was:
            return was
        agent.state = check(AGENT_TRANSITIONS, "agent", agent.agent_id, was, state)
        self.by_state[was] -= 1
        if was is AgentState.UNREACHABLE:
            agent.unreachable_at = None
            self.unreachable.pop(agent.agent_id, None)
        if state is AgentState.UNREACHABLE:
            agent.unreachable_at = now
        self._counted(agent)
        return was

    def connect(self, agent: AgentRecord, connection: int) -> None:
        """Rule 4: ``agent`` registered on stream ``connection``."""
        if agent.connection is None:
            self.connected += 1
        agent.connection = connection

    def disconnect(self, agent: AgentRecord) -> int | None:
        """Rule 4: ``agent``'s stream is gone; returns the stream it was on (None: none)."""
        connection, agent.connection = agent.connection, None
        if connection is not None:
            self.connected -= 1
        return connection

    def remove(self, agent_id: str) -> AgentRecord:
        """Rule 1: deleted or pruned. Its tasks are the task table's to forget first."""
        agent = self.agents.pop(agent_id)
        if agent.connection is not None:
            self.connected -= 1
        self.by_state[agent.state] -= 1
        self.unreachable.pop(agent_id, None)
        self._tasks.remove_agent(agent_id)
        return agent

    def _counted(self, agent: AgentRecord) -> None:
        self.by_state[agent.state] += 1
        if agent.state is AgentState.UNREACHABLE:
            self.unreachable[agent.agent_id] = _since(agent)

    def validate(self) -> list[str]:
        """Rule 3, as the faults found."""
        faults = [
            f"agent {aid} is filed under another id"
            for aid, a in self.agents.items()
            if a.agent_id != aid
        ]
        by_state = dict.fromkeys(AgentState, 0)
        for a in self.agents.values():
            by_state[a.state] += 1
        for state, n in by_state.items():
            if self.by_state[state] != n:
                faults.append(f"{self.by_state[state]} agents counted {state.value}, {n} are")
        connected = sum(1 for a in self.agents.values() if a.connection is not None)
        if self.connected != connected:
            faults.append(f"{self.connected} agents counted connected, {connected} are")
        # The order holds exactly the UNREACHABLE agents, each since it became so, oldest first.
        unreachable = {
            a.agent_id: a.unreachable_at
            for a in self.agents.values()
            if a.state is AgentState.UNREACHABLE
        }
        if self.unreachable != unreachable:
            faults.append(
                f"{len(self.unreachable)} agents in the pruning order, {len(unreachable)} "
                "unreachable (or since another time)"
            )
        since = list(self.unreachable.values())
        if since != sorted(since):
            faults.append("the pruning order is not oldest first")
        stamped = [
            a.agent_id
            for a in self.agents.values()
            if (a.unreachable_at is None) == (a.state is AgentState.UNREACHABLE)
        ]
        if stamped:
            faults.append(f"agents whose unreachable_at does not match their state: {stamped}")
        return faults


def _since(agent: AgentRecord) -> float:
    assert agent.unreachable_at is not None  # an UNREACHABLE agent's record has it (rule 2)
    return agent.unreachable_at
