"""Agents and custom executors lost (master/core/losses.py): who is told, and when; Mesos'
FAILURE event on the Mesos API, ``agents_lost``/``executor_terminated`` on the SDK."""

from __future__ import annotations

from corral.master.core import commands as cmd
from corral.master.core import events as ev
from corral.master.core.config import MasterConfig
from corral.master.core.types import Requester, TaskState
from tests.unit.core_harness import Harness, of, status, task


def _two_frameworks(h: Harness) -> tuple[str, str, str, str]:
    """Agent A runs a task of framework "busy"; framework "idle" has none anywhere; agent B is
    a second agent, empty."""
    a, _ = h.add_agent(resources="cpus:4;mem:4096")
    b, _ = h.add_agent(resources="cpus:4;mem:4096")
    busy, _ = h.subscribe("busy")
    offer = next(o for o in h.offers_for(busy) if o.agent_id == a)
    h.accept(busy, [offer.offer_id], task("t1"))
    h.agent_updates(a, status("t1", busy, a, TaskState.RUNNING, uuid=b"r"))
    idle, _ = h.subscribe("idle")
    return a, b, busy, idle


def test_an_unreachable_agent_is_told_to_the_frameworks_that_had_tasks_on_it() -> None:
    h = Harness(MasterConfig(agent_timeout=10))
    a, b, busy, _ = _two_frameworks(h)
    h.close_agent(a)
    h.close_agent(b)
    out = h.tick(11)
    lost = of(cmd.SendAgentLost, out)
    assert [(c.framework_id, c.agent_id, c.removed) for c in lost] == [(busy, a, False)]
    assert lost[0].hostname == h.core.agents[a].spec.hostname
    assert "unreachable" in lost[0].message
    # After the task's own status, as Mesos sends them.
    [lost_at] = [
        i
        for i, c in enumerate(out)
        if isinstance(c, cmd.SendUpdates) and c.statuses[0].state is TaskState.LOST
    ]
    assert lost_at < out.index(lost[0])
    # Told once: pruning the agent later says nothing more.
    assert of(cmd.SendAgentLost, h.tick(3 * 7 * 24 * 3600)) == []


def test_a_disconnected_framework_is_not_told() -> None:
    h = Harness(MasterConfig(agent_timeout=10, framework_failover_timeout=1000))
    a, _, busy, _ = _two_frameworks(h)
    h.handle(ev.FrameworkStreamClosed(**h.base(), framework_id=busy, stream_id=h.streams[busy]))
    h.close_agent(a)
    assert of(cmd.SendAgentLost, h.tick(11)) == []


def test_a_deleted_agent_is_told_as_removed() -> None:
    h = Harness(MasterConfig(agent_timeout=1000))
    a, _, busy, _ = _two_frameworks(h)
    h.close_agent(a)
    out = h.handle(
        ev.DeleteAgent(**h.base(), requester=Requester("10.0.0.7:1", "alice"), agent_id=a)
    )
    [lost] = of(cmd.SendAgentLost, out)
    assert (lost.framework_id, lost.agent_id, lost.removed) == (busy, a, True)
    assert "alice" in lost.message


def test_an_executors_end_goes_to_its_framework_from_the_agents_current_stream() -> None:
    h = Harness()
    a, _, busy, idle = _two_frameworks(h)

    def ended(framework_id: str, connection: int | None = None) -> list[cmd.Command]:
        return h.handle(
            ev.AgentExecutorTerminated(
                **h.base(),
                agent_id=a,
                connection=h.connections[a] if connection is None else connection,
                framework_id=framework_id,
                executor_id="ex1",
                status=3 << 8,
                message="executor 'ex1' exited with code 3",
            )
        )

    [told] = of(cmd.SendExecutorTerminated, ended(busy))
    assert (told.framework_id, told.agent_id, told.executor_id, told.status) == (
        busy,
        a,
        "ex1",
        768,
    )
    assert of(cmd.SendExecutorTerminated, ended("unknown-framework")) == []
    assert of(cmd.SendExecutorTerminated, ended(busy, connection=-5)) == []  # a stale stream
    assert of(cmd.SendExecutorTerminated, ended(idle))  # no record of executors is kept
