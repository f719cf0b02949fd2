"""Nothing kept forever (issue #30, item 8): unreachable agents are forgotten after an age and
past a count, oldest first, in the core and in the registry; a framework's failover timeout is
capped. Each test runs the core with the shipped defaults unless it is about a flag."""

from __future__ import annotations

import pytest

from corral.master.core import commands as cmd
from corral.master.core import events as ev
from corral.master.core.config import WEEK, MasterConfig
from corral.master.core.durable import FrameworkEntry, RegistryState, RemoveAgent
from corral.master.core.states import AgentState, FrameworkState
from corral.master.core.types import FrameworkSpec, ReportedTask, TaskState
from corral.master.registry import MemoryRegistry
from tests.unit.core_harness import Harness, demand, of, status, task
from tests.unit.test_master_recovery import persist, register, restarted

DAY = 24 * 3600.0


def _gone(
    h: Harness, registry: MemoryRegistry, n: int, apart: float = 1.0, keep: str = ""
) -> list[str]:
    """``n`` agents that register and go away one after the other, ``apart`` seconds between
    them, each marked UNREACHABLE once its timeout ran out (agent ``keep`` heartbeats
    meanwhile); all persisted."""
    ids = []
    for _ in range(n):
        aid, _ = register(h, registry)
        ids.append(aid)
        persist(registry, h.close_agent(aid))
        h.now += apart
        if keep:
            h.handle(ev.AgentHeartbeat(**h.base(), agent_id=keep, connection=h.connections[keep]))
        persist(registry, h.tick(h.config.agent_timeout / 2 + 1))
        if keep:
            h.handle(ev.AgentHeartbeat(**h.base(), agent_id=keep, connection=h.connections[keep]))
        persist(registry, h.tick(h.config.agent_timeout / 2 + 1))
    return ids


def _pruned(out: list[cmd.Command]) -> list[str]:
    return [c.subject for c in of(cmd.ClusterEvent, out) if c.kind == "agent_pruned"]


def test_an_agent_unreachable_past_the_default_age_is_forgotten_with_its_record() -> None:
    h = Harness()
    registry = MemoryRegistry()
    old, young = _gone(h, registry, 2, apart=DAY)
    # Just before the age (two weeks) runs out nothing goes.
    h.now = h.core.agents[old].unreachable_at + 2 * WEEK - 1  # type: ignore[operator]
    assert _pruned(h.tick()) == []
    out = h.tick(2.0)
    assert _pruned(out) == [old]
    [event] = [c for c in of(cmd.ClusterEvent, out) if c.kind == "agent_pruned"]
    assert "--registry-max-agent-age" in event.message and event.reason == "AgentPruned"
    [write] = persist(registry, out)
    assert write.changes == (RemoveAgent(old),)
    assert old not in h.core.agents and set(registry.agents) == {young}
    assert h.core.agents[young].state is AgentState.UNREACHABLE
    # The younger one follows a day (and the seconds it took to time out) later.
    out = h.tick(DAY + 60)
    assert _pruned(out) == [young]
    persist(registry, out)
    assert h.core.agents == {} and registry.agents == {}


def test_past_the_count_the_oldest_unreachable_agents_go_first() -> None:
    h = Harness(MasterConfig(registry_max_agent_count=2))
    registry = MemoryRegistry()
    active, _ = register(h, registry)  # connected agents never count
    ids = _gone(h, registry, 4, keep=active)
    # Each tick that marked one more UNREACHABLE forgot the oldest past two.
    assert set(h.core.agents) == {active, ids[2], ids[3]}
    assert set(registry.agents) == {active, ids[2], ids[3]}


def test_a_registry_past_the_count_is_pruned_oldest_first_after_a_restart() -> None:
    registry = MemoryRegistry()
    h = Harness()
    ids = _gone(h, registry, 5)
    h2 = restarted(registry, MasterConfig(registry_max_agent_count=3), now=h.now + 1)
    out = h2.tick()
    assert _pruned(out) == ids[:2]
    persist(registry, out)
    assert set(registry.agents) == set(ids[2:])


@pytest.mark.parametrize("durable", [True, False], ids=["with-a-registry", "memory"])
def test_a_forgotten_agents_partition_aware_tasks_are_forgotten_and_answered_unknown(
    durable: bool,
) -> None:
    h = Harness(MasterConfig(registry_max_agent_count=0, status_retry_interval=1e6))
    # A master with a registry that outlives it (SQLite, ZooKeeper) knows every agent it did
    # not forget; one without a registry cannot tell a forgotten agent from any other.
    h.handle(ev.Recover(**h.base(), state=RegistryState(durable=durable)))
    registry = MemoryRegistry()
    aid, _ = register(h, registry)
    fid, _ = h.subscribe("aware", partition_aware=True)
    h.set_demands(fid, demand("web", count=1))
    [offer] = h.offers_for(fid)
    h.accept(fid, [offer.offer_id], task("t1", demand="web"))
    h.agent_updates(aid, status("t1", fid, aid, TaskState.RUNNING, uuid=b"u1"))
    spec = h.core.frameworks[fid].tasks["t1"].spec
    secret = h.core.agents[aid].secret
    h.close_agent(aid)
    out = h.tick(h.config.agent_timeout + 1)  # UNREACHABLE, then forgotten at once (count 0)
    assert _pruned(out) == [aid]
    [event] = [c for c in of(cmd.ClusterEvent, out) if c.kind == "agent_pruned"]
    assert "1 unreachable tasks forgotten" in event.message
    assert h.core.frameworks[fid].tasks == {}
    assert h.core.frameworks[fid].demand_tasks == {}  # the demand is unmet again
    out = h.handle(ev.Reconcile(**h.call_base(fid), tasks=(("t1", aid),)))
    [answer] = [s for u in of(cmd.SendUpdates, out) for s in u.statuses]
    assert answer.state is TaskState.UNKNOWN
    # Back after all: admitted with its id and secret, as an agent the master does not know.
    reported = ReportedTask(fid, spec, status("t1", fid, aid, TaskState.RUNNING))
    back, out = register(h, registry, agent_id=aid, secret=secret, tasks=[reported])
    assert back == aid and h.core.agents[aid].state is AgentState.ACTIVE
    assert h.core.agents[aid].secret == secret
    if durable:  # the master launched nothing there as far as it knows: the task is killed
        assert [(k.framework_id, k.task_id) for k in of(cmd.SendKill, out)] == [(fid, "t1")]
        assert h.core.frameworks[fid].tasks == {}
        assert [c.kind for c in of(cmd.ClusterEvent, out)].count("reported_task_refused") == 1
    else:  # it cannot tell, as after its own restart: taken in
        assert of(cmd.SendKill, out) == []
        assert h.core.frameworks[fid].tasks["t1"].state is TaskState.RUNNING


def test_a_forgotten_agent_back_with_a_task_reported_lost_has_it_killed() -> None:
    h = Harness(MasterConfig(registry_max_agent_count=0))
    registry = MemoryRegistry()
    aid, _ = register(h, registry)
    fid, _ = h.subscribe("plain")
    [offer] = h.offers_for(fid)
    h.accept(fid, [offer.offer_id], task("t1"))
    h.agent_updates(aid, status("t1", fid, aid, TaskState.RUNNING, uuid=b"u1"))
    spec = h.core.frameworks[fid].tasks["t1"].spec
    h.close_agent(aid)
    assert _pruned(h.tick(h.config.agent_timeout + 1)) == [aid]
    assert h.core.completed[(fid, "t1")].state is TaskState.LOST
    reported = ReportedTask(fid, spec, status("t1", fid, aid, TaskState.RUNNING))
    _, out = h.add_agent(agent_id=aid, tasks=(reported,))
    assert [(k.framework_id, k.task_id) for k in of(cmd.SendKill, out)] == [(fid, "t1")]


def test_an_agent_back_before_the_age_is_not_forgotten() -> None:
    h = Harness()
    registry = MemoryRegistry()
    [aid] = _gone(h, registry, 1)
    h.now += WEEK
    register(h, registry, agent_id=aid, secret=h.core.agents[aid].secret)
    assert h.core.agents[aid].state is AgentState.ACTIVE
    assert h.core.agent_table.unreachable == {}
    assert _pruned(h.tick(2 * WEEK)) == []
    assert aid in registry.agents


def test_a_framework_asking_to_be_kept_forever_is_capped_at_the_default_four_weeks() -> None:
    h = Harness()
    registry = MemoryRegistry()
    fid, out = h.subscribe("forever", failover_timeout=1e9)
    [capped] = [c for c in of(cmd.ClusterEvent, out) if c.kind == "failover_timeout_capped"]
    assert "1e+09s" in capped.message and "--max-failover-timeout" in capped.message
    assert h.core.frameworks[fid].spec.failover_timeout == 4 * WEEK
    persist(registry, out)
    assert registry.frameworks[fid].spec.failover_timeout == 4 * WEEK
    h.handle(ev.FrameworkStreamClosed(**h.base(), framework_id=fid, stream_id=h.streams[fid]))
    h.tick(4 * WEEK - 10)
    assert h.core.frameworks[fid].state is FrameworkState.DISCONNECTED
    h.tick(20)
    assert h.core.frameworks[fid].state is FrameworkState.REMOVED


def test_marathons_week_is_kept_as_asked() -> None:
    h = Harness()
    fid, out = h.subscribe("marathon", failover_timeout=WEEK)
    assert h.core.frameworks[fid].spec.failover_timeout == WEEK
    assert not [c for c in of(cmd.ClusterEvent, out) if c.kind == "failover_timeout_capped"]


def test_a_framework_kept_forever_by_an_older_registry_is_capped_after_a_restart() -> None:
    registry = MemoryRegistry()
    spec = FrameworkSpec(framework_id="F1", name="old", role="*", failover_timeout=1e9)
    registry.frameworks["F1"] = FrameworkEntry(spec=spec, registered_at=1.0, disconnected_at=2.0)
    h = restarted(registry, MasterConfig(max_failover_timeout=3600.0), now=10.0)
    assert h.core.frameworks["F1"].spec.failover_timeout == 3600.0
    assert registry.frameworks["F1"].spec.failover_timeout == 3600.0  # persisted capped
    h.tick(3600.0)
    assert h.core.frameworks["F1"].state is FrameworkState.REMOVED
