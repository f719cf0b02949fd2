"""agent_table.py: agents enter, change state and leave through the table, which keeps the
count per state, the UNREACHABLE agents' order and the connected count with them (rules 1-4)."""

from __future__ import annotations

from corral.master.core import events as ev
from corral.master.core.config import MasterConfig
from corral.master.core.states import AgentState
from corral.master.core.types import Requester
from tests.unit.core_harness import Harness


def _unreachable(h: Harness, n: int) -> list[str]:
    ids = []
    for _ in range(n):
        aid, _ = h.add_agent()
        h.close_agent(aid)
        ids.append(aid)
        h.tick(h.config.agent_timeout + 1)
    return ids


def test_unreachable_agents_are_ordered_by_when_they_became_so() -> None:
    h = Harness(MasterConfig(agent_timeout=10))
    ids = _unreachable(h, 3)
    table = h.core.agent_table
    assert list(table.unreachable) == ids
    assert all(h.core.agents[a].state is AgentState.UNREACHABLE for a in ids)
    assert list(table.unreachable.values()) == [h.core.agents[a].unreachable_at for a in ids]
    assert table.validate() == []


def test_a_deleted_unreachable_agent_leaves_the_pruning_order() -> None:
    h = Harness(MasterConfig(agent_timeout=10))
    first, second = _unreachable(h, 2)
    h.handle(ev.DeleteAgent(**h.base(), requester=Requester("10.0.0.7:1", "alice"), agent_id=first))
    assert first not in h.core.agents
    assert list(h.core.agent_table.unreachable) == [second]
    assert h.core.tasks.sums.rows.keys() == h.core.agents.keys()


def test_a_count_or_order_that_drifts_is_found() -> None:
    h = Harness(MasterConfig(agent_timeout=10))
    [aid] = _unreachable(h, 1)
    table = h.core.agent_table
    table.by_state[AgentState.RECOVERING] += 1
    assert any("counted recovering" in f for f in table.validate())
    table.by_state[AgentState.RECOVERING] -= 1
    table.unreachable.pop(aid)
    assert any("pruning order" in f for f in table.validate())
    table.unreachable[aid] = 0.0
    h.core.agents[aid].unreachable_at = None
    assert any("unreachable_at does not match" in f for f in table.validate())


def test_the_connected_count_follows_each_agent_s_stream() -> None:
    h = Harness(MasterConfig(agent_timeout=10))
    first, _ = h.add_agent()
    h.add_agent()
    table = h.core.agent_table
    assert table.connected == 2
    h.close_agent(first)
    assert table.connected == 1
    table.connected += 1
    assert any("counted connected" in f for f in table.validate())


def test_an_agent_pruned_while_its_stream_is_still_open_is_counted_out() -> None:
    # Silent past its timeout with its stream open (a paused host): UNREACHABLE, still on its
    # stream; then pruned past the registry's age. The harness validates after every event.
    h = Harness(MasterConfig(agent_timeout=10, registry_max_agent_age=100))
    aid, _ = h.add_agent()
    h.tick(h.config.agent_timeout + 1)
    assert h.core.agents[aid].state is AgentState.UNREACHABLE
    assert h.core.agents[aid].connection is not None
    h.tick(h.config.registry_max_agent_age + 1)
    assert aid not in h.core.agents
    assert h.core.agent_table.connected == 0


def test_the_count_per_state_follows_agents_in_and_out_and_between_states() -> None:
    h = Harness(MasterConfig(agent_timeout=10))
    table = h.core.agent_table
    [gone] = _unreachable(h, 1)
    h.add_agent()
    h.add_agent()
    assert table.by_state == {
        AgentState.ACTIVE: 2,
        AgentState.UNREACHABLE: 1,
        AgentState.RECOVERING: 0,
    }
    h.handle(ev.DeleteAgent(**h.base(), requester=Requester("10.0.0.7:1", "alice"), agent_id=gone))
    assert table.by_state[AgentState.UNREACHABLE] == 0
    assert table.by_state[AgentState.ACTIVE] == 2
    assert table.validate() == []
