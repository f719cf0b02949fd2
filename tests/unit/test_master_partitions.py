"""Partitions heal: an agent marked UNREACHABLE that is heard from again re-registers, and its
tasks are reconciled as Mesos does (partition-aware ones come back, the others are killed)."""

from __future__ import annotations

from corral.master.core import commands as cmd
from corral.master.core import events as ev
from corral.master.core.config import MasterConfig
from corral.master.core.states import AgentState
from corral.master.core.types import ReportedTask, TaskReason, TaskState
from tests.unit.core_harness import Harness, of, status, task


def _partitioned() -> tuple[Harness, str, str, str]:
    """An agent (4 cpus) running one task of a partition-aware framework ("aware") and one of
    a framework that is not ("plain"), 1 cpu each, then silent past its timeout."""
    h = Harness(MasterConfig(agent_timeout=10, status_retry_interval=100))
    aid, _ = h.add_agent()
    aware, _ = h.subscribe("aware", partition_aware=True)
    plain, _ = h.subscribe("plain")
    for fid in (aware, plain):
        offers = h.offers_for(fid)
        if offers:
            h.accept(fid, [offers[0].offer_id], task(f"t-{fid}"), refuse=0)
            h.agent_updates(
                aid, status(f"t-{fid}", fid, aid, TaskState.RUNNING, uuid=b"u" + fid.encode())
            )
    assert len(h.core.agents[aid].tasks) == 2
    out = h.tick(11)
    assert h.core.agents[aid].state is AgentState.UNREACHABLE
    states = {s.task_id: s.state for u in of(cmd.SendUpdates, out) for s in u.statuses}
    assert states == {f"t-{aware}": TaskState.UNREACHABLE, f"t-{plain}": TaskState.LOST}
    return h, aid, aware, plain


def _reported(h: Harness, aid: str, *fids: str) -> tuple[ReportedTask, ...]:
    """What the agent reports when it re-registers: its tasks still RUNNING."""
    out = []
    for fid in fids:
        tid = f"t-{fid}"
        rec = h.core.frameworks[fid].tasks.get(tid) or h.core.completed[(fid, tid)]
        out.append(ReportedTask(fid, rec.spec, status(tid, fid, aid, TaskState.RUNNING)))
    return tuple(out)


def test_a_heartbeat_from_an_unreachable_agent_closes_its_stream_once() -> None:
    h, aid, _, _ = _partitioned()
    conn = h.connections[aid]
    out = h.handle(ev.AgentHeartbeat(**h.base(), agent_id=aid, connection=conn))
    [close] = of(cmd.CloseAgentStream, out)
    assert close.connection == conn
    assert [c.kind for c in of(cmd.ClusterEvent, out)] == ["agent_reregister_asked"]
    # Still UNREACHABLE, and no longer on that stream: later messages on it change nothing.
    assert h.core.agents[aid].state is AgentState.UNREACHABLE
    assert h.core.agents[aid].connection is None
    assert h.handle(ev.AgentHeartbeat(**h.base(), agent_id=aid, connection=conn)) == []
    assert h.close_agent(aid) == []


def test_status_updates_from_an_unreachable_agent_are_dropped_and_it_is_asked_back() -> None:
    h, aid, aware, _ = _partitioned()
    out = h.agent_updates(aid, status(f"t-{aware}", aware, aid, TaskState.FINISHED, uuid=b"f"))
    assert of(cmd.CloseAgentStream, out)
    assert of(cmd.SendUpdates, out) == []  # resent by the agent once it re-registered
    assert h.core.frameworks[aware].tasks[f"t-{aware}"].state is TaskState.UNREACHABLE


def test_reregistering_brings_aware_tasks_back_kills_the_lost_and_offers_the_rest() -> None:
    h, aid, aware, plain = _partitioned()
    h.handle(ev.AgentHeartbeat(**h.base(), agent_id=aid, connection=h.connections[aid]))
    h.now += 1
    _, out = h.add_agent(agent_id=aid, tasks=_reported(h, aid, aware, plain))
    assert h.core.agents[aid].state is AgentState.ACTIVE
    # The task of the framework that was told LOST must not keep running.
    assert [(k.framework_id, k.task_id) for k in of(cmd.SendKill, out)] == [(plain, f"t-{plain}")]
    assert f"t-{plain}" not in h.core.frameworks[plain].tasks
    # The partition-aware one is RUNNING again, and its framework is told so (no ack needed).
    assert h.core.frameworks[aware].tasks[f"t-{aware}"].state is TaskState.RUNNING
    [back] = [s for u in of(cmd.SendUpdates, out) if u.framework_id == aware for s in u.statuses]
    assert back.state is TaskState.RUNNING and back.uuid == b""
    assert back.reason is TaskReason.RECONCILIATION
    # The agent's free resources are offered again: 4 cpus less the aware task's 1.
    offered = sum(o.scalars[0] for batch in h.allocate() for o in batch.offers)
    assert offered == 3


def test_a_lost_task_is_killed_even_after_its_record_is_forgotten() -> None:
    # The master keeps a bounded number of ended tasks: an agent back after a long partition
    # may report a task whose LOST record is gone. It is still killed, since its framework is
    # not partition-aware and the agent was UNREACHABLE (Mesos' rule).
    h, aid, _, plain = _partitioned()
    reported = _reported(h, aid, plain)
    h.core.completed.clear()
    h.close_agent(aid)
    _, out = h.add_agent(agent_id=aid, tasks=reported)
    assert [k.task_id for k in of(cmd.SendKill, out)] == [f"t-{plain}"]
    assert h.core.frameworks[plain].tasks == {}
