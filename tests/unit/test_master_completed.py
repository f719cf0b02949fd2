"""Ended state is bounded as in Mesos: each framework's last N ended tasks
(--max-completed-tasks-per-framework), the last M removed frameworks
(--max-completed-frameworks); /api/v1/state can leave them out or show one framework."""

from __future__ import annotations

import pytest

from corral.master import views
from corral.master.core import commands as cmd
from corral.master.core import events as ev
from corral.master.core.config import MasterConfig
from corral.master.core.states import FrameworkState
from corral.master.core.types import TaskState
from corral.master.http.routes import state_filters
from tests.unit.core_harness import Harness, of, status, task


def _run(h: Harness, aid: str, fid: str, *task_ids: str, end: TaskState | None = None) -> None:
    """Launch ``task_ids`` on the agent for the framework; end them in ``end`` if given."""
    # Offers to others are declined (filtered for a while: the clock stands still) and this
    # framework revived, until the agent is offered to it.
    mine: list[str] = []
    for _ in range(len(h.streams) + 1):
        h.allocate()
        mine = [o.offer_id for o in h.core.offers.values() if o.framework_id == fid]
        if mine:
            break
        for o in list(h.core.offers.values()):
            h.handle(ev.Decline(**h.call_base(o.framework_id), offer_ids=(o.offer_id,)))
        h.handle(ev.Revive(**h.call_base(fid)))
    [offer] = [h.core.offers[oid] for oid in mine if h.core.offers[oid].agent_id == aid]
    h.accept(fid, [offer.offer_id], *(task(t, "cpus:0.1;mem:8") for t in task_ids), refuse=0)
    if end is not None:
        h.agent_updates(aid, *(status(t, fid, aid, end, uuid=t.encode()) for t in task_ids))


def _reconciled(h: Harness, fid: str, task_id: str) -> TaskState:
    out = h.handle(ev.Reconcile(**h.call_base(fid), tasks=((task_id, ""),)))
    [update] = of(cmd.SendUpdates, out)
    return update.statuses[0].state


def test_each_framework_keeps_its_own_last_ended_tasks() -> None:
    h = Harness(MasterConfig(max_completed_tasks_per_framework=2, agent_timeout=10**6))
    aid, _ = h.add_agent()
    busy, _ = h.subscribe("busy")
    quiet, _ = h.subscribe("quiet")
    _run(h, aid, quiet, "q1", end=TaskState.FINISHED)
    for i in range(5):  # a busy framework must not push the quiet one's history out
        _run(h, aid, busy, f"b{i}", end=TaskState.FINISHED)
    kept = sorted((t.framework_id, t.task_id) for t in h.core.completed.values())
    assert kept == [(busy, "b3"), (busy, "b4"), (quiet, "q1")]
    assert _reconciled(h, busy, "b4") is TaskState.FINISHED
    assert _reconciled(h, quiet, "q1") is TaskState.FINISHED
    # Forgotten: answered as unknown (LOST for a framework that is not partition-aware).
    assert _reconciled(h, busy, "b0") is TaskState.LOST


def test_only_the_last_removed_frameworks_are_kept() -> None:
    h = Harness(MasterConfig(max_completed_frameworks=1, agent_timeout=10**6))
    aid, _ = h.add_agent()
    first, _ = h.subscribe("first")
    second, _ = h.subscribe("second")
    _run(h, aid, first, "f1")
    _run(h, aid, second, "s1")
    h.handle(ev.Teardown(**h.call_base(first)))
    assert h.core.frameworks[first].state is FrameworkState.REMOVED
    assert (first, "f1") in h.core.completed  # KILLED, kept with its framework
    h.handle(ev.Teardown(**h.call_base(second)))
    assert first not in h.core.frameworks and (first, "f1") not in h.core.completed
    assert h.core.frameworks[second].state is FrameworkState.REMOVED
    assert h.core.completed[(second, "s1")].state is TaskState.KILLED


def test_zero_keeps_nothing_ended() -> None:
    h = Harness(
        MasterConfig(
            max_completed_frameworks=0, max_completed_tasks_per_framework=0, agent_timeout=10**6
        )
    )
    aid, _ = h.add_agent()
    fid, _ = h.subscribe()
    _run(h, aid, fid, "t1", end=TaskState.FINISHED)
    assert len(h.core.completed) == 0
    h.handle(ev.Teardown(**h.call_base(fid)))
    assert h.core.frameworks == {}


def test_a_task_declared_ended_and_still_kept_is_killed_when_an_agent_reports_it() -> None:
    h = Harness(MasterConfig(max_completed_tasks_per_framework=5, agent_timeout=10**6))
    aid, _ = h.add_agent()
    fid, _ = h.subscribe()
    _run(h, aid, fid, "t1")
    h.handle(ev.Kill(**h.call_base(fid), task_id="t1", grace_seconds=0))
    h.agent_updates(aid, status("t1", fid, aid, TaskState.KILLED, uuid=b"k"))
    spec = h.core.completed[(fid, "t1")].spec
    from corral.master.core.types import ReportedTask

    # The agent, confused (a restart from an old checkpoint), reports it running again.
    reported = ReportedTask(fid, spec, status("t1", fid, aid, TaskState.RUNNING))
    h.close_agent(aid)
    _, out = h.add_agent(agent_id=aid, tasks=(reported,))
    assert [k.task_id for k in of(cmd.SendKill, out)] == ["t1"]
    assert "t1" not in h.core.frameworks[fid].tasks


def _state_harness() -> tuple[Harness, str, str]:
    h = Harness(MasterConfig(agent_timeout=10**6))
    aid, _ = h.add_agent()
    one, _ = h.subscribe("one")
    two, _ = h.subscribe("two")
    _run(h, aid, one, "live1")
    _run(h, aid, one, "done1", end=TaskState.FINISHED)
    _run(h, aid, two, "live2")
    gone, _ = h.subscribe("gone")
    h.handle(ev.Teardown(**h.call_base(gone)))
    h.allocate()
    return h, one, gone


def test_state_filters_by_framework_and_leaves_ended_things_out() -> None:
    h, one, gone = _state_harness()
    full = views.state_json(h.core)
    assert {t["id"] for t in full["tasks"]} == {"live1", "done1", "live2"}
    assert gone in {f["id"] for f in full["frameworks"]}

    mine = views.state_json(h.core, framework_id=one)
    assert [f["id"] for f in mine["frameworks"]] == [one]
    assert {t["id"] for t in mine["tasks"]} == {"live1", "done1"}
    assert all(o["framework_id"] == one for o in mine["offers"])
    assert len(mine["agents"]) == 1 and mine["summary"] == full["summary"]

    live = views.state_json(h.core, completed=False)
    assert {t["id"] for t in live["tasks"]} == {"live1", "live2"}
    assert gone not in {f["id"] for f in live["frameworks"]}

    assert {t["id"] for t in views.state_json(h.core, one, completed=False)["tasks"]} == {"live1"}
    assert views.state_json(h.core, tasks=False)["tasks"] == []


def test_state_query_is_checked() -> None:
    assert state_filters([]) == (None, True)
    assert state_filters([("framework_id", "F1"), ("completed", "False")]) == ("F1", False)
    for pairs, reason in [
        ((("completed", "no"),), "completed must be true or false"),
        ((("framework", "F1"),), "unknown query parameter 'framework'"),
        ((("framework_id", ""),), "framework_id is empty"),
        ((("framework_id", "a"), ("framework_id", "b")), "framework_id is given twice"),
    ]:
        with pytest.raises(ValueError, match=reason):
            state_filters(pairs)


def test_an_ended_task_kept_lets_go_of_the_framework_s_task_message() -> None:
    h = Harness(MasterConfig(agent_timeout=10**6))
    aid, _ = h.add_agent()
    fid, _ = h.subscribe("fw")
    live, ended = task("live", "cpus:0.1;mem:8"), task("ended", "cpus:0.1;mem:8")
    live.wire, ended.wire = object(), object()  # what the shell carries: the TaskInfo parsed
    h.allocate()
    [offer] = [o for o in h.core.offers.values() if o.framework_id == fid]
    h.accept(fid, [offer.offer_id], live, ended, refuse=0)
    h.agent_updates(aid, status("ended", fid, aid, TaskState.FINISHED, uuid=b"e"))
    assert h.core.completed[(fid, "ended")].spec.wire is None
    assert h.core.frameworks[fid].tasks["live"].spec.wire is not None  # labels still read
    assert _reconciled(h, fid, "ended") is TaskState.FINISHED
