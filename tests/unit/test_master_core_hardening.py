"""Reports and calls a buggy or hostile peer could send: the core refuses them before anything
changes, and the rest of the cluster goes on (issue: hardening)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from corral.master.core import commands as cmd
from corral.master.core import events as ev
from corral.master.core.config import MasterConfig
from corral.master.core.master import CallRejected
from corral.master.core.types import AgentSpec, ReportedTask, TaskState
from corral.resources import Resources, parse_resources
from tests.unit.core_harness import Harness, of, status, task


def _snapshot(h: Harness) -> tuple[object, ...]:
    core = h.core
    return (
        sorted(core.agents),
        sorted(core.offers),
        sorted((f, sorted(r.tasks)) for f, r in core.frameworks.items()),
        sorted((a, sorted(r.tasks), r.free_ports) for a, r in core.agents.items()),
    )


def _register(
    h: Harness,
    agent_id: str = "",
    secret: str = "",
    resources: str = "cpus:4;mem:4096",
    tasks: tuple[ReportedTask, ...] = (),
    reservations: dict[str, Resources] | None = None,
    connection: int = 900,
) -> list[cmd.Command]:
    spec = AgentSpec(
        agent_id=agent_id,
        hostname="host",
        resources=parse_resources(resources),
        reservations=reservations or {},
    )
    out = h.handle(
        ev.AgentRegister(
            **h.base(),
            connection=connection,
            spec=spec,
            new_agent_id=f"N{connection}",
            tasks=tasks,
            secret=secret,
            new_secret=f"secret-{connection}",
        )
    )
    for registered in of(cmd.SendRegistered, out):
        h.connections[registered.agent_id] = connection
    return out


def test_a_state_only_the_master_sets_is_ignored_and_teardown_and_timeouts_still_work() -> None:
    h = Harness(config=MasterConfig(framework_failover_timeout=5.0))
    aid, _ = h.add_agent()
    fid, _ = h.subscribe()
    offer = h.offers_for(fid)[0]
    h.accept(fid, [offer.offer_id], task("t1"))
    out = h.agent_updates(aid, status("t1", fid, aid, TaskState.UNKNOWN, uuid=b"u1"))
    assert [e.kind for e in of(cmd.ClusterEvent, out)] == ["status_ignored"]
    assert of(cmd.SendUpdates, out) == [], "the framework was told a state the agent may not set"
    assert of(cmd.SendAgentAcks, out)[0].acknowledgements == ((fid, "t1", b"u1"),)
    assert h.core.frameworks[fid].tasks["t1"].state is TaskState.STAGING
    # The framework's failover timeout still removes it, and its task is killed.
    h.handle(ev.FrameworkStreamClosed(**h.base(), framework_id=fid, stream_id=h.streams[fid]))
    out = h.tick(advance=h.config.framework_failover_timeout + 1)
    assert [k.task_id for k in of(cmd.SendKill, out)] == ["t1"]
    assert h.core.completed[(fid, "t1")].state is TaskState.KILLED


def test_a_decline_naming_an_offer_twice_is_refused_and_changes_nothing() -> None:
    h = Harness()
    h.add_agent()
    fid, _ = h.subscribe()
    offer = h.offers_for(fid)[0]
    before = _snapshot(h)
    with pytest.raises(CallRejected, match="appears twice") as info:
        h.handle(
            ev.Decline(
                **h.call_base(fid), offer_ids=(offer.offer_id, offer.offer_id), refuse_seconds=0
            )
        )
    assert info.value.code == "INVALID_ARGUMENT"
    assert _snapshot(h) == before
    # The offer is still good: a plain decline returns it, and the agent is offered again.
    h.handle(ev.Decline(**h.call_base(fid), offer_ids=(offer.offer_id,), refuse_seconds=0))
    assert h.offers_for(fid), "the agent was never offered again"


def test_an_acknowledgement_named_twice_is_refused() -> None:
    h = Harness()
    fid, _ = h.subscribe()
    ack = ("A1", "t1", b"u1")
    with pytest.raises(CallRejected, match="appears twice"):
        h.handle(ev.Acknowledge(**h.call_base(fid), acknowledgements=(ack, ack)))


def test_reconcile_answers_a_task_named_twice_once() -> None:
    h = Harness()
    fid, _ = h.subscribe()
    out = h.handle(ev.Reconcile(**h.call_base(fid), tasks=(("x", "A1"), ("x", "A1"))))
    assert [s.task_id for s in of(cmd.SendUpdates, out)[0].statuses] == ["x"]


def test_two_tasks_of_one_accept_cannot_share_a_port() -> None:
    h = Harness()
    h.add_agent(resources="cpus:4;mem:4096;ports:[31000-31010]")
    fid, _ = h.subscribe()
    offer = h.offers_for(fid)[0]
    before = _snapshot(h)
    a = task("a", "cpus:1;mem:128;ports:[31000-31000]")
    b = task("b", "cpus:1;mem:128;ports:[31000-31001]")
    with pytest.raises(CallRejected, match="same port"):
        h.accept(fid, [offer.offer_id], a, b)
    assert _snapshot(h) == before
    c = task("c", "cpus:1;mem:128;ports:[31001-31001]")
    launched = of(cmd.SendLaunch, h.accept(fid, [offer.offer_id], a, c))
    assert [t.task_id for t in launched[0].tasks] == ["a", "c"]


def test_reservations_beyond_the_agents_resources_are_refused_without_a_record() -> None:
    h = Harness()
    with pytest.raises(CallRejected, match="reservations") as info:
        _register(
            h, reservations={"web": parse_resources("cpus:3"), "db": parse_resources("cpus:2")}
        )
    assert info.value.code == "INVALID_ARGUMENT"
    assert h.core.agents == {}


def _reported(fid: str, task_id: str, resources: str, state: TaskState) -> ReportedTask:
    spec = task(task_id, resources)
    return ReportedTask(framework_id=fid, spec=spec, status=status(task_id, fid, "", state))


def test_reported_tasks_larger_than_the_agent_are_refused() -> None:
    h = Harness()
    huge = _reported("F1", "t", "cpus:1000;mem:1", TaskState.RUNNING)
    with pytest.raises(CallRejected, match="more than the agent"):
        _register(h, agent_id="X1", resources="cpus:1;mem:1024", tasks=(huge,))
    assert h.core.agents == {} and h.core.frameworks == {}
    # An ended task's resources are not in use: the same report with it FINISHED is fine.
    done = replace(huge, status=status("t", "F1", "", TaskState.FINISHED))
    assert of(
        cmd.SendRegistered, _register(h, agent_id="X1", resources="cpus:1;mem:1024", tasks=(done,))
    )


def test_a_reported_task_in_a_master_only_state_is_refused() -> None:
    h = Harness()
    lost = _reported("F1", "t", "cpus:1;mem:1", TaskState.UNKNOWN)
    with pytest.raises(CallRejected, match="only the master sets"):
        _register(h, agent_id="X1", tasks=(lost,))


def test_an_agent_cannot_report_another_agents_task() -> None:
    h = Harness()
    real, _ = h.add_agent()
    rogue, _ = h.add_agent()
    fid, _ = h.subscribe()
    offer = next(o for o in h.offers_for(fid) if o.agent_id == real)
    h.accept(fid, [offer.offer_id], task("t1"))
    out = h.agent_updates(rogue, status("t1", fid, real, TaskState.FINISHED, uuid=b"u"))
    assert of(cmd.SendUpdates, out) == []
    assert "launched on agent" in of(cmd.ClusterEvent, out)[0].message
    assert h.core.frameworks[fid].tasks["t1"].state is TaskState.STAGING
    # ... nor claim it when it registers again.
    with pytest.raises(CallRejected, match="runs on agent"):
        _register(
            h,
            agent_id=rogue,
            secret=h.core.agents[rogue].secret,
            tasks=(_reported(fid, "t1", "cpus:1;mem:128", TaskState.RUNNING),),
        )
    # The real agent's report is believed.
    out = h.agent_updates(real, status("t1", fid, real, TaskState.RUNNING, uuid=b"v"))
    assert [s.state for s in of(cmd.SendUpdates, out)[0].statuses] == [TaskState.RUNNING]


def test_a_live_task_the_agent_was_never_given_is_not_forwarded() -> None:
    h = Harness()
    aid, _ = h.add_agent()
    fid, _ = h.subscribe()
    out = h.agent_updates(aid, status("ghost", fid, aid, TaskState.RUNNING, uuid=b"u"))
    assert of(cmd.SendUpdates, out) == []
    assert "never given" in of(cmd.ClusterEvent, out)[0].message


def test_an_agent_id_cannot_be_taken_over_without_its_secret() -> None:
    h = Harness()
    out = _register(h, connection=901)
    (registered,) = of(cmd.SendRegistered, out)
    aid, secret = registered.agent_id, registered.secret
    assert secret == "secret-901", "a new agent is handed the shell's fresh secret"
    fid, _ = h.subscribe()
    offer = h.offers_for(fid)[0]
    h.accept(fid, [offer.offer_id], task("t1"))
    before = _snapshot(h)
    for wrong in ("", "guess"):
        with pytest.raises(CallRejected, match="another agent") as info:
            _register(h, agent_id=aid, secret=wrong, connection=902)
        assert info.value.code == "PERMISSION_DENIED"
    assert _snapshot(h) == before
    assert h.core.frameworks[fid].tasks["t1"].state is TaskState.STAGING
    # The agent itself, restarted with its checkpointed secret, re-registers.
    running = _reported(fid, "t1", "cpus:1;mem:128", TaskState.RUNNING)
    out = _register(h, agent_id=aid, secret=secret, tasks=(running,), connection=903)
    assert of(cmd.SendRegistered, out)[0].secret == secret
    assert h.core.frameworks[fid].tasks["t1"].state is TaskState.RUNNING


def test_an_unknown_id_keeps_the_secret_it_presents() -> None:
    """After a master restart every id is unknown: the agent's checkpointed secret stays
    valid, so the next restart of the agent still proves its id."""
    h = Harness()
    out = _register(h, agent_id="S7", secret="kept", connection=904)
    assert of(cmd.SendRegistered, out)[0].secret == "kept"
    with pytest.raises(CallRejected):
        _register(h, agent_id="S7", secret="other", connection=905)


@pytest.mark.parametrize("field_name", ["name", "principal"])
def test_a_framework_id_cannot_be_taken_over_with_another_name_or_principal(
    field_name: str,
) -> None:
    h = Harness()
    fid, _ = h.subscribe(name="owner", principal="alice")
    spec = {"name": "owner", "principal": "alice", field_name: "mallory"}
    with pytest.raises(CallRejected, match="failover must keep") as info:
        h.subscribe(framework_id=fid, **spec)
    assert info.value.code == "PERMISSION_DENIED"
    assert h.core.frameworks[fid].spec.principal == "alice"
    # The same framework failing over (same name and principal) is fine.
    again, out = h.subscribe(framework_id=fid, name="owner", principal="alice")
    assert again == fid and of(cmd.CloseFrameworkStream, out)


def test_explain_answers_for_a_removed_framework() -> None:
    h = Harness()
    fid, _ = h.subscribe()
    h.handle(ev.Teardown(**h.call_base(fid)))
    answer = h.core.explain(fid, h.now)
    assert answer["state"] == "removed"
    assert answer["reasons"] == {"framework removed": 1}
