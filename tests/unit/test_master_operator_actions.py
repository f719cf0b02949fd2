"""Operators' actions in the master core (operator_actions.py, maintenance.py): kill, teardown,
cordon, uncordon, drain and delete, each checked before anything changes, answered, recorded
as a cluster event naming who asked, and durable where it must be."""

from __future__ import annotations

from typing import Any

import pytest

from corral.master.core import commands as cmd
from corral.master.core import events as ev
from corral.master.core.durable import PutAgent, RemoveAgent
from corral.master.core.refusals import CallRejected, Refusal
from corral.master.core.states import agent_shown
from corral.master.core.types import Maintenance, Requester, TaskReason, TaskState
from tests.unit.core_harness import Harness, demand, of, status, task

ALICE = Requester("10.0.0.7:51234", "alice")


def op(h: Harness, kind: type[ev.OperatorAction], **fields: Any) -> list[cmd.Command]:
    return h.handle(kind(**h.base(), requester=ALICE, **fields))


def answer(out: list[cmd.Command]) -> Any:
    (a,) = of(cmd.Answer, out)
    return a.value


def events_of(out: list[cmd.Command], kind: str) -> list[cmd.ClusterEvent]:
    return [c for c in of(cmd.ClusterEvent, out) if c.kind == kind]


def running(n_agents: int = 2, tasks: int = 2) -> tuple[Harness, str, list[str]]:
    """``n_agents`` agents of 4 cpus; framework "web" with a demand of ``tasks`` one-cpu tasks
    on the first agent, RUNNING."""
    h = Harness()
    aids = [h.add_agent()[0] for _ in range(n_agents)]
    fw, _ = h.subscribe("web")
    h.set_demands(fw, demand("web", count=tasks))
    offer = next(o for o in h.offers_for(fw) if o.agent_id == aids[0])
    h.accept(fw, [offer.offer_id], *(task(f"t{i}", demand="web") for i in range(tasks)))
    h.agent_updates(
        aids[0], *(status(f"t{i}", fw, aids[0], TaskState.RUNNING) for i in range(tasks))
    )
    return h, fw, aids


def refused(h: Harness, kind: type[ev.OperatorAction], code: Refusal, **fields: Any) -> str:
    with pytest.raises(CallRejected) as info:
        op(h, kind, **fields)
    assert info.value.code is code
    return info.value.message


# --- kill ------------------------------------------------------------------------------------


def test_an_operators_kill_reaches_the_framework_with_its_reason_and_who_asked() -> None:
    h, fw, aids = running()
    out = op(h, ev.KillTasks, tasks=(("", "t0"),), grace_seconds=2.0)
    (kill,) = of(cmd.SendKill, out)
    assert (kill.task_id, kill.agent_id, kill.grace_seconds) == ("t0", aids[0], 2.0)
    assert answer(out) == (("t0", fw, aids[0], "killing"),)
    (event,) = events_of(out, "task_kill_requested")
    assert (
        event.reason == "KillRequested" and "operator alice (declared) at 10.0.0.7" in event.message
    )
    out = h.agent_updates(aids[0], status("t0", fw, aids[0], TaskState.KILLED, b"u"))
    (update,) = of(cmd.SendUpdates, out)[0].statuses
    assert update.reason is TaskReason.KILLED_BY_OPERATOR
    assert "killed by operator alice" in update.message
    # The TaskKilled event says it too (issue #40: its message was empty).
    (killed,) = events_of(out, "task_killed")
    assert killed.message.startswith(
        f"framework {fw} on agent {aids[0]}: KILLED_BY_OPERATOR: killed by operator alice"
    ), killed.message


def test_a_kill_with_its_own_grace_and_at_once() -> None:
    h, _, _ = running()
    (own,) = of(cmd.SendKill, op(h, ev.KillTasks, tasks=(("", "t0"),)))
    assert own.grace_seconds == 0.0  # the agent uses the task's own grace period
    (now,) = of(cmd.SendKill, op(h, ev.KillTasks, tasks=(("", "t1"),), grace_seconds=0.0))
    assert 0 < now.grace_seconds < 0.01  # SIGKILL at once


def test_a_kill_naming_an_unknown_task_kills_nothing() -> None:
    h, fw, _ = running()
    msg = refused(h, ev.KillTasks, Refusal.NOT_FOUND, tasks=(("", "t0"), ("", "nope")))
    assert "nope" in msg
    assert not h.core.frameworks[fw].tasks["t0"].kill_requested
    refused(h, ev.KillTasks, Refusal.NOT_FOUND, tasks=(("nofw", "t0"),))
    refused(h, ev.KillTasks, Refusal.INVALID_ARGUMENT, tasks=(("", "t0"),), grace_seconds=-1.0)
    refused(h, ev.KillTasks, Refusal.INVALID_ARGUMENT, tasks=())


def test_a_task_id_two_frameworks_use_needs_the_framework() -> None:
    h, _, _ = running()
    other, _ = h.subscribe("other")
    # On another agent (on the same one alike: agents key tasks by framework and id).
    aid, _ = h.add_agent()
    offer = next(o for o in h.offers_for(other) if o.agent_id == aid)
    h.accept(other, [offer.offer_id], task("t0"))
    assert "name the framework" in refused(
        h, ev.KillTasks, Refusal.INVALID_ARGUMENT, tasks=(("", "t0"),)
    )
    out = op(h, ev.KillTasks, tasks=((other, "t0"),))
    assert [k.framework_id for k in of(cmd.SendKill, out)] == [other]


def test_killing_an_ended_task_answers_that_it_ended() -> None:
    h, fw, aids = running()
    h.agent_updates(aids[0], status("t0", fw, aids[0], TaskState.FINISHED, b"u"))
    out = op(h, ev.KillTasks, tasks=((fw, "t0"),))
    assert not of(cmd.SendKill, out)
    assert answer(out) == (("t0", fw, aids[0], "already FINISHED"),)


# --- teardown --------------------------------------------------------------------------------


def test_teardown_removes_the_framework_and_kills_its_tasks() -> None:
    h, fw, _ = running()
    out = op(h, ev.TeardownFramework, framework_id=fw)
    assert answer(out) == 2
    assert len(of(cmd.SendKill, out)) == 2
    assert h.core.frameworks[fw].state.value == "removed"
    (asked,) = events_of(out, "framework_teardown_requested")
    assert "alice" in asked.message
    assert events_of(out, "framework_removed")
    assert of(cmd.CloseFrameworkStream, out)[0].message.startswith("torn down by operator alice")
    refused(h, ev.TeardownFramework, Refusal.FAILED_PRECONDITION, framework_id=fw)
    refused(h, ev.TeardownFramework, Refusal.NOT_FOUND, framework_id="nope")


# --- cordon, uncordon, drain -----------------------------------------------------------------


def test_a_cordoned_agent_is_offered_to_nobody_until_uncordoned() -> None:
    h = Harness()
    a, _ = h.add_agent()
    fw, _ = h.subscribe("any")
    (offer,) = h.offers_for(fw)
    out = op(h, ev.Cordon, agent_id=a)
    assert of(cmd.SendRescind, out)[0].offer_ids == (offer.offer_id,)
    assert answer(out)[0] == Maintenance("cordoned", h.now, str(ALICE))
    assert "alice" in events_of(out, "agent_cordoned")[0].message
    (persisted,) = of(cmd.Persist, out)
    assert [c.entry.maintenance for c in persisted.changes if isinstance(c, PutAgent)] == [
        Maintenance("cordoned", h.now, str(ALICE))
    ]
    h.now += 10
    assert h.offers_for(fw) == []
    assert "agent draining" in h.core.explain(fw, h.now)["reasons"]
    out = op(h, ev.Uncordon, agent_id=a)
    assert answer(out)[0] is None and events_of(out, "agent_uncordoned")
    h.now += 10
    assert [o.agent_id for o in h.offers_for(fw)] == [a]
    refused(h, ev.Cordon, Refusal.NOT_FOUND, agent_id="nope")


def test_a_launch_bound_release_does_not_uncordon() -> None:
    h = Harness()
    a, _ = h.add_agent()
    fw, _ = h.subscribe("any")
    h.core.holds.held.add(a)  # as if held at its launch bound
    op(h, ev.Cordon, agent_id=a)
    h.now += 10
    assert h.offers_for(fw) == []  # the hold was released (no launches); the cordon stays
    assert a not in h.core.holds.held


def test_drain_kills_the_tasks_with_a_reason_and_they_are_placed_elsewhere() -> None:
    h, fw, aids = running()
    out = op(h, ev.Drain, agent_id=aids[0], grace_seconds=5.0)
    kills = of(cmd.SendKill, out)
    assert sorted(k.task_id for k in kills) == ["t0", "t1"] and {
        k.grace_seconds for k in kills
    } == {5.0}
    maint, killed = answer(out)
    assert (
        maint.mode == "draining" and maint.grace_seconds == 5.0 and sorted(killed) == ["t0", "t1"]
    )
    assert events_of(out, "agent_draining") and not events_of(out, "agent_drained")
    out = h.agent_updates(aids[0], status("t0", fw, aids[0], TaskState.KILLED, b"u0"))
    (update,) = of(cmd.SendUpdates, out)[0].statuses
    assert (
        update.reason is TaskReason.AGENT_DRAINING and "drained for maintenance" in update.message
    )
    assert not events_of(out, "agent_drained")
    out = h.agent_updates(aids[0], status("t1", fw, aids[0], TaskState.KILLED, b"u1"))
    assert events_of(out, "agent_drained")
    # The framework's demand is unmet again: it is offered the other agent only.
    h.now += 10
    h.allocate()
    assert {o.agent_id for o in h.core.book.of_framework(fw)} == {aids[1]}


def test_preemption_picks_no_victim_on_a_cordoned_agent() -> None:
    h, fw, aids = running(n_agents=1, tasks=4)
    h.set_demands(fw, demand("web", count=4, priority_class="batch"))
    vip, _ = h.subscribe("vip")
    op(h, ev.Cordon, agent_id=aids[0])
    h.set_demands(vip, demand("x", "cpus:2;mem:128", count=1, priority_class="serving"))
    h.now += 1
    assert not of(cmd.SendKill, h.handle(ev.AllocationTick(**h.base(), seed=1)))


# --- delete ----------------------------------------------------------------------------------


def test_delete_refuses_a_connected_agent_and_forgets_a_gone_one() -> None:
    h, fw, aids = running()
    msg = refused(h, ev.DeleteAgent, Refusal.FAILED_PRECONDITION, agent_id=aids[0])
    assert "connected" in msg
    h.close_agent(aids[0])
    out = op(h, ev.DeleteAgent, agent_id=aids[0])
    assert answer(out) == 2
    assert aids[0] not in h.core.agents
    (persisted,) = of(cmd.Persist, out)
    assert RemoveAgent(aids[0]) in persisted.changes
    gone = [s for u in of(cmd.SendUpdates, out) for s in u.statuses]
    assert {(s.task_id, s.state, s.reason) for s in gone} == {
        ("t0", TaskState.GONE, TaskReason.AGENT_REMOVED),
        ("t1", TaskState.GONE, TaskReason.AGENT_REMOVED),
    }
    assert "alice" in events_of(out, "agent_deleted")[0].message
    assert h.core.frameworks[fw].demand_tasks == {}
    refused(h, ev.DeleteAgent, Refusal.NOT_FOUND, agent_id=aids[0])


def test_a_deleted_agents_event_names_its_state_as_the_tables_do() -> None:
    """Issue #40: a disconnected, drained agent was deleted as ``(active)``."""
    h = Harness()
    a, _ = h.add_agent()
    op(h, ev.Drain, agent_id=a)
    h.close_agent(a)
    out = op(h, ev.DeleteAgent, agent_id=a)
    (deleted,) = events_of(out, "agent_deleted")
    assert "(disconnected,drained): deleted by" in deleted.message, deleted.message


@pytest.mark.parametrize(
    ("state", "connected", "mode", "drained", "shown"),
    [
        ("active", True, "", False, "active"),
        ("active", False, "", False, "disconnected"),
        ("active", True, "cordoned", False, "cordoned"),
        ("active", True, "draining", False, "draining"),
        ("active", True, "draining", True, "drained"),
        ("active", False, "draining", True, "disconnected,drained"),
        ("unreachable", False, "cordoned", False, "unreachable,cordoned"),
        ("recovering", False, "", False, "recovering"),
    ],
)
def test_how_an_agents_state_is_shown(
    state: str, connected: bool, mode: str, drained: bool, shown: str
) -> None:
    assert agent_shown(state, connected, mode, drained) == shown


def test_maintenance_survives_a_restart() -> None:
    from corral.master.core.durable import RegistryState

    h = Harness()
    a, _ = h.add_agent()
    out = op(h, ev.Drain, agent_id=a)
    entries = [c.entry for p in of(cmd.Persist, out) for c in p.changes if isinstance(c, PutAgent)]
    restarted = Harness()
    restarted.handle(ev.Recover(**restarted.base(), state=RegistryState(agents=(entries[-1],))))
    assert restarted.core.agents[a].maintenance == entries[-1].maintenance
    spec = h.core.agents[a].spec
    out = restarted.handle(
        ev.AgentRegister(
            **restarted.base(),
            connection=99,
            spec=spec,
            new_agent_id="",
            secret=h.core.agents[a].secret,
        )
    )
    assert of(cmd.SendRegistered, out)
    fw, _ = restarted.subscribe("any")
    restarted.now += 10
    assert restarted.offers_for(fw) == []  # still out of offers after its re-registration


def test_a_draining_agent_that_comes_back_after_a_restart_has_its_tasks_killed() -> None:
    from corral.master.core.durable import RegistryState
    from corral.master.core.types import ReportedTask

    h, fw, aids = running(n_agents=1, tasks=1)
    out = op(h, ev.Drain, agent_id=aids[0])
    agent = h.core.agents[aids[0]]
    entries = [c.entry for p in of(cmd.Persist, out) for c in p.changes if isinstance(c, PutAgent)]
    # The master restarts before the task ends; the agent comes back with it, still running.
    again = Harness()
    again.handle(ev.Recover(**again.base(), state=RegistryState(agents=(entries[-1],))))
    live = h.core.frameworks[fw].tasks["t0"]
    reported = ReportedTask(fw, live.spec, status("t0", fw, aids[0], TaskState.RUNNING))
    out = again.handle(
        ev.AgentRegister(
            **again.base(),
            connection=7,
            spec=agent.spec,
            new_agent_id="",
            tasks=(reported,),
            secret=agent.secret,
        )
    )
    (kill,) = of(cmd.SendKill, out)
    assert kill.task_id == "t0"
    task = again.core.agents[aids[0]].tasks[(fw, "t0")]
    assert task.killed_for is not None and task.killed_for[0] is TaskReason.AGENT_DRAINING
