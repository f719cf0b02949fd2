"""The master core's durability: what it persists, and how a restarted core recovers from it.

A MemoryRegistry stands in for the shell's store: every test feeds it the ``Persist`` commands
the core emits, then starts a second core from what it holds, as a restarted master does.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import pytest

from corral.master.allocator.numpy_allocator import DrfAllocator
from corral.master.core import commands as cmd
from corral.master.core import events as ev
from corral.master.core.config import MasterConfig
from corral.master.core.durable import FrameworkEntry, PutAgent, PutFramework, PutQuota, PutWeight
from corral.master.core.refusals import CallRejected, Refusal
from corral.master.core.states import AgentState, FrameworkState
from corral.master.core.types import AgentSpec, FrameworkSpec, ReportedTask, TaskState
from corral.master.registry import MemoryRegistry
from corral.priority import PriorityClass
from corral.resources import parse_resources
from corral.roles import Quota
from tests.unit.core_harness import Harness, of, status, task

RESOURCES = "cpus:4;mem:4096;disk:1000"


def persist(registry: MemoryRegistry, commands: Iterable[cmd.Command]) -> list[cmd.Persist]:
    writes = of(cmd.Persist, commands)
    for w in writes:
        registry.apply(w.changes)
    return writes


def register(
    h: Harness, registry: MemoryRegistry, agent_id: str = "", secret: str = "", tasks=()
) -> tuple[str, list[cmd.Command]]:  # type: ignore[no-untyped-def]
    conn = int(h.sid()[1:]) + 10_000
    out = h.handle(
        ev.AgentRegister(
            **h.base(),
            connection=conn,
            spec=AgentSpec(agent_id=agent_id, hostname="h1", resources=parse_resources(RESOURCES)),
            new_agent_id=f"A{conn}",
            tasks=tuple(tasks),
            secret=secret,
            new_secret=f"secret-{conn}",
        )
    )
    persist(registry, out)
    [registered] = of(cmd.SendRegistered, out)
    h.connections[registered.agent_id] = conn
    return registered.agent_id, out


def restarted(registry: MemoryRegistry, config: MasterConfig, now: float) -> Harness:
    h = Harness(config, now=now)
    persist(registry, h.handle(ev.Recover(**h.base(), state=registry.load())))
    return h


def running_cluster(
    config: MasterConfig, *, partition_aware: bool = False
) -> tuple[Harness, MemoryRegistry, str, str, str]:
    """One agent, one framework (failover timeout 600 s), task t1 RUNNING; all persisted."""
    registry = MemoryRegistry()
    h = Harness(config)
    aid, _ = register(h, registry)
    fid, out = h.subscribe(name="web", failover_timeout=600.0, partition_aware=partition_aware)
    persist(registry, out)
    [offer] = h.offers_for(fid)
    persist(registry, h.accept(fid, [offer.offer_id], task("t1")))
    persist(registry, h.agent_updates(aid, status("t1", fid, aid, TaskState.RUNNING, b"u1")))
    return h, registry, aid, fid, h.core.agents[aid].secret


def test_admissions_subscriptions_and_operator_settings_are_persisted_and_hot_paths_are_not() -> (
    None
):
    registry = MemoryRegistry()
    h = Harness()
    aid, out = register(h, registry)
    [write] = of(cmd.Persist, out)
    assert [type(c) for c in write.changes] == [PutAgent]
    assert out[-1] is write  # last: the shell sends REGISTERED only after it is durable
    assert write.changes[0].entry.secret == h.core.agents[aid].secret != ""  # type: ignore[union-attr]
    fid, out = h.subscribe(name="web", failover_timeout=600.0)
    [write] = persist(registry, out)
    [change] = write.changes
    assert isinstance(change, PutFramework) and change.entry.spec.failover_timeout == 600.0
    # Offers, launches, statuses, heartbeats and ticks write nothing.
    [offer] = h.offers_for(fid)
    assert persist(registry, h.accept(fid, [offer.offer_id], task("t1"))) == []
    assert persist(registry, h.agent_updates(aid, status("t1", fid, aid, TaskState.RUNNING))) == []
    assert persist(registry, h.tick(1.0)) == []
    # A refused call persists nothing.
    with pytest.raises(CallRejected):
        h.handle(ev.SetWeight(**h.base(), role="web", weight=-1.0))
    [write] = persist(registry, h.handle(ev.SetWeight(**h.base(), role="web", weight=3.0)))
    assert write.changes == (PutWeight("web", 3.0),)
    quota = Quota(guarantee=(1.0, 0.0, 0.0, 0.0), limit=(8.0, math.inf, math.inf, math.inf))
    [write] = persist(
        registry,
        h.handle(ev.SetQuota(**h.base(), role="web", guarantee=quota.guarantee, limit=quota.limit)),
    )
    assert write.changes == (PutQuota("web", quota),)
    # A disconnect is persisted with its time: the failover timeout counts from it.
    h.now += 5
    [write] = persist(
        registry,
        h.handle(ev.FrameworkStreamClosed(**h.base(), framework_id=fid, stream_id=h.streams[fid])),
    )
    assert registry.frameworks[fid].disconnected_at == h.now


def test_a_restarted_master_keeps_tasks_of_agents_and_frameworks_that_come_back() -> None:
    config = MasterConfig(agent_reregister_timeout=300.0)
    h, registry, aid, fid, secret = running_cluster(config)
    spec = h.core.frameworks[fid].tasks["t1"].spec
    h2 = restarted(registry, config, now=h.now + 30)
    assert h2.core.agents[aid].state is AgentState.RECOVERING
    assert not h2.core.agents[aid].in_allocator  # nothing is offered from an agent not back
    assert h2.core.frameworks[fid].state is FrameworkState.DISCONNECTED
    # The failover timeout (600 s) survived: 100 s later the framework is still there.
    h2.tick(100.0)
    assert h2.core.frameworks[fid].state is FrameworkState.DISCONNECTED
    reported = ReportedTask(fid, spec, status("t1", fid, aid, TaskState.RUNNING))
    _, out = register(h2, registry, agent_id=aid, secret=secret, tasks=[reported])
    assert h2.core.agents[aid].state is AgentState.ACTIVE
    assert h2.core.frameworks[fid].tasks["t1"].state is TaskState.RUNNING
    assert not of(cmd.SendKill, out)
    resubscribed, out = h2.subscribe(name="web", framework_id=fid, failover_timeout=600.0)
    assert resubscribed == fid and of(cmd.ClusterEvent, out)[-1].kind == "framework_resubscribed"
    assert h2.core.recovering == 0


def test_the_allocator_has_room_for_every_recovered_agent_before_they_re_register() -> None:
    """Rule 5: the frameworks are in first; agents re-registering one by one must not double
    the allocator's per-agent rows at the frameworks' full width."""
    config = MasterConfig(agent_reregister_timeout=300.0)
    registry = MemoryRegistry()
    h = Harness(config)
    agents = [register(h, registry)[0] for _ in range(100)]
    fid, out = h.subscribe(name="web", failover_timeout=600.0)
    persist(registry, out)
    h2 = restarted(registry, config, now=h.now + 30)
    assert h2.core.frameworks[fid].state is FrameworkState.DISCONNECTED  # in before the agents
    allocator = h2.core.allocator
    assert isinstance(allocator, DrfAllocator)
    rows = allocator.filters.until
    assert rows.shape[0] >= len(agents), "no room was made for the recovered agents"
    for aid in agents:
        register(h2, registry, agent_id=aid, secret=h.core.agents[aid].secret)
    assert allocator.filters.until is rows, "the rows grew while the recovered agents came back"
    assert h2.core.recovering == 0


def test_agents_re_registering_are_told_the_interval_of_the_cluster_coming_back_once() -> None:
    """ticks.py rule 3: the RECOVERING count as expected back, so each returning agent is told
    its interval once, at its registration, however few are back yet (counting only the
    connected, a tick re-told them shorter, then longer as the rest came back)."""
    config = MasterConfig(agent_reregister_timeout=30.0, max_agent_heartbeats_per_second=20.0)
    registry = MemoryRegistry()
    h = Harness(config)
    agents = [register(h, registry)[0] for _ in range(400)]
    h.tick()
    h2 = restarted(registry, config, now=h.now + 30)
    expected = 400 / 20.0  # the cluster's size over the rate cap: above the 5 s base interval
    told: list[float] = []
    for i, aid in enumerate(agents):
        _, out = register(h2, registry, agent_id=aid, secret=h.core.agents[aid].secret)
        told += [c.heartbeat_interval for c in of(cmd.SendRegistered, out)]
        if i % 25 == 0:
            told += [c.heartbeat_interval for c in of(cmd.SendHeartbeatInterval, h2.tick(0.1))]
    told += [c.heartbeat_interval for c in of(cmd.SendHeartbeatInterval, h2.tick(0.1))]
    assert told == [expected] * len(agents)
    # Those that never come back are UNREACHABLE after the timeout: the cluster shrank, and
    # those back are told so (their 20 s interval would still time them out within 60 s).
    h3 = restarted(registry, config, now=h2.now + 30)
    for aid in agents[:100]:
        register(h3, registry, agent_id=aid, secret=h.core.agents[aid].secret)
    assert of(cmd.SendHeartbeatInterval, h3.tick()) == []  # the other 300 still expected
    out = h3.tick(31.0)
    assert h3.core.recovering == 0 and all(
        h3.core.agents[aid].state is AgentState.ACTIVE for aid in agents[:100]
    )
    out += h3.tick()
    retold = {c.agent_id: c.heartbeat_interval for c in of(cmd.SendHeartbeatInterval, out)}
    assert set(retold) == set(agents[:100]) and set(retold.values()) == {100 / 20.0}


def test_a_recovered_agent_must_present_its_secret() -> None:
    config = MasterConfig()
    h, registry, aid, _fid, _secret = running_cluster(config)
    h2 = restarted(registry, config, now=h.now + 1)
    with pytest.raises(CallRejected) as info:
        register(h2, registry, agent_id=aid, secret="guessed")
    assert info.value.code is Refusal.PERMISSION_DENIED


def test_a_removed_framework_stays_removed_across_a_restart() -> None:
    config = MasterConfig()
    h, registry, _aid, fid, _secret = running_cluster(config)
    persist(registry, h.handle(ev.Teardown(**h.call_base(fid))))
    h2 = restarted(registry, config, now=h.now + 1)
    with pytest.raises(CallRejected) as info:
        h2.subscribe(name="web", framework_id=fid)
    assert info.value.code is Refusal.FAILED_PRECONDITION


@pytest.mark.parametrize("aware", [False, True])
def test_questions_about_a_recovering_agents_tasks_wait_for_its_fate(aware: bool) -> None:
    config = MasterConfig(agent_reregister_timeout=60.0)
    h, registry, aid, fid, secret = running_cluster(config, partition_aware=aware)
    spec = h.core.frameworks[fid].tasks["t1"].spec
    h2 = restarted(registry, config, now=h.now + 1)
    h2.subscribe(name="web", framework_id=fid, failover_timeout=600.0, partition_aware=aware)
    out = h2.handle(ev.Reconcile(**h2.call_base(fid), tasks=(("t1", aid), ("t2", ""))))
    assert of(cmd.SendUpdates, out) == []  # unknown yet: the agent may come back with them
    assert of(cmd.SendUpdates, h2.tick(30.0)) == []
    out = h2.tick(31.0)  # past the re-registration timeout
    assert h2.core.agents[aid].state is AgentState.UNREACHABLE
    [answer] = of(cmd.SendUpdates, out)
    states = {s.task_id: s.state for s in answer.statuses}
    if aware:
        assert states == {"t1": TaskState.UNREACHABLE, "t2": TaskState.UNKNOWN}
    else:
        assert states == {"t1": TaskState.LOST, "t2": TaskState.LOST}
    # The agent comes back late: a task its framework was told is LOST must not run on.
    reported = ReportedTask(fid, spec, status("t1", fid, aid, TaskState.RUNNING))
    _, out = register(h2, registry, agent_id=aid, secret=secret, tasks=[reported])
    assert h2.core.agents[aid].state is AgentState.ACTIVE
    assert registry.agents[aid].unreachable_at is None
    kills = [k.task_id for k in of(cmd.SendKill, out)]
    if aware:
        assert kills == [] and h2.core.frameworks[fid].tasks["t1"].state is TaskState.RUNNING
    else:
        assert kills == ["t1"] and "t1" not in h2.core.frameworks[fid].tasks
        # Its end, when the agent reports it, is not news: the framework was told LOST.
        killed = h2.agent_updates(aid, status("t1", fid, aid, TaskState.KILLED, b"k1"))
        assert of(cmd.SendUpdates, killed) == []


def test_a_question_is_answered_when_its_agent_re_registers() -> None:
    config = MasterConfig(agent_reregister_timeout=60.0)
    h, registry, aid, fid, secret = running_cluster(config)
    spec = h.core.frameworks[fid].tasks["t1"].spec
    h2 = restarted(registry, config, now=h.now + 1)
    h2.subscribe(name="web", framework_id=fid, failover_timeout=600.0)
    asked = h2.handle(ev.Reconcile(**h2.call_base(fid), tasks=(("t1", aid),)))
    assert of(cmd.SendUpdates, asked) == []
    reported = ReportedTask(fid, spec, status("t1", fid, aid, TaskState.RUNNING))
    _, out = register(h2, registry, agent_id=aid, secret=secret, tasks=[reported])
    [answer] = of(cmd.SendUpdates, out)
    assert [(s.task_id, s.state) for s in answer.statuses] == [("t1", TaskState.RUNNING)]


def test_agents_are_marked_unreachable_no_faster_than_the_removal_rate() -> None:
    config = MasterConfig(agent_reregister_timeout=10.0, agent_removal_rate=0.5)
    registry = MemoryRegistry()
    h = Harness(config)
    for _ in range(3):
        register(h, registry)
    h2 = restarted(registry, config, now=h.now)

    def unreachable() -> int:
        return sum(1 for a in h2.core.agents.values() if a.state is AgentState.UNREACHABLE)

    h2.tick(11.0)
    assert unreachable() == 1
    h2.tick(1.0)
    assert unreachable() == 1  # half a token
    h2.tick(1.0)
    assert unreachable() == 2
    h2.tick(2.0)
    assert unreachable() == 3 and h2.core.recovering == 0


def test_the_registry_wins_over_the_flags_for_what_operators_set() -> None:
    registry = MemoryRegistry()
    registry.apply([PutWeight("web", 5.0)])
    flags = MasterConfig(role_weights=(("web", 2.0), ("batch", 3.0)))
    h = restarted(registry, flags, now=1.0)
    weights = {v.role: v.weight for v in h.core.role_views()}
    assert weights["web"] == 5.0 and weights["batch"] == 3.0


def test_a_framework_disconnected_before_the_restart_keeps_counting() -> None:
    config = MasterConfig()
    h, registry, _aid, fid, _secret = running_cluster(config)
    h.now += 1
    persist(
        registry,
        h.handle(ev.FrameworkStreamClosed(**h.base(), framework_id=fid, stream_id=h.streams[fid])),
    )
    h2 = restarted(registry, config, now=h.now + 500)
    h2.tick(99.0)
    assert h2.core.frameworks[fid].state is FrameworkState.DISCONNECTED
    persist(registry, h2.tick(2.0))  # 601 s after its disconnect
    assert h2.core.frameworks[fid].state is FrameworkState.REMOVED
    assert registry.frameworks[fid].removed_at == h2.now


def test_a_task_that_ended_while_the_master_was_down_is_answered_with_its_end() -> None:
    config = MasterConfig(agent_reregister_timeout=60.0)
    h, registry, aid, fid, secret = running_cluster(config)
    spec = h.core.frameworks[fid].tasks["t1"].spec
    h2 = restarted(registry, config, now=h.now + 1)
    h2.subscribe(name="web", framework_id=fid, failover_timeout=600.0)
    h2.handle(ev.Reconcile(**h2.call_base(fid), tasks=(("t1", aid),)))
    finished = status("t1", fid, aid, TaskState.FINISHED, b"u9")
    _, out = register(
        h2, registry, agent_id=aid, secret=secret, tasks=[ReportedTask(fid, spec, finished)]
    )
    [answer] = of(cmd.SendUpdates, out)
    # Not LOST: the agent said how it ended (its FINISHED update follows, resent).
    assert [(s.task_id, s.state) for s in answer.statuses] == [("t1", TaskState.FINISHED)]


def test_a_task_the_framework_was_told_is_lost_does_not_end_again() -> None:
    h = Harness(MasterConfig(agent_timeout=10, status_retry_interval=100))
    aid, _ = h.add_agent()
    fid, _ = h.subscribe()
    [offer] = h.offers_for(fid)
    h.accept(fid, [offer.offer_id], task("t1"))
    h.agent_updates(aid, status("t1", fid, aid, TaskState.RUNNING, uuid=b"u1"))
    h.close_agent(aid)
    [lost] = of(cmd.SendUpdates, h.tick(11))
    assert lost.statuses[0].state is TaskState.LOST
    h.add_agent(agent_id=aid)  # back, without the task (it finished meanwhile)
    out = h.agent_updates(aid, status("t1", fid, aid, TaskState.FINISHED, uuid=b"u2"))
    assert of(cmd.SendUpdates, out) == []  # a task ends once
    [ack] = of(cmd.SendAgentAcks, out)
    assert ack.acknowledgements == ((fid, "t1", b"u2"),)  # the agent may forget it
    [ignored] = [c for c in of(cmd.ClusterEvent, out) if c.kind == "status_ignored"]
    assert "already ended LOST" in ignored.message


def test_priority_classes_set_and_deleted_by_operators_survive_a_restart() -> None:
    registry = MemoryRegistry()
    h = Harness()
    gold = PriorityClass("gold", 500, global_default=True)
    persist(registry, h.handle(ev.SetPriorityClass(**h.base(), priority_class=gold)))
    persist(registry, h.handle(ev.DeletePriorityClass(**h.base(), name="batch")))
    h2 = restarted(registry, MasterConfig(), now=h.now + 1)
    assert h2.core.priority.classes["gold"] == gold and h2.core.priority.default == "gold"
    assert "batch" not in h2.core.priority.classes  # a default class, deleted, stays deleted
    assert "serving" in h2.core.priority.classes


def test_a_restarted_master_keeps_only_the_newest_removed_frameworks() -> None:
    registry = MemoryRegistry()
    registry.apply(
        [
            PutFramework(
                FrameworkEntry(
                    spec=FrameworkSpec(framework_id=f"f{i}", name="x"),
                    registered_at=0.0,
                    removed_at=float(i),
                )
            )
            for i in range(8)
        ]
    )
    h = restarted(registry, MasterConfig(max_completed_frameworks=3), now=100.0)
    assert sorted(h.core.frameworks) == ["f5", "f6", "f7"]
    assert sorted(h.core.durable_frameworks) == ["f5", "f6", "f7"]
