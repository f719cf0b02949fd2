"""GetState narrowed to one object (master/state_scope.py): each scope gives, entry for entry
(the same messages), what the whole state holds of that object and of what refers to it, and
nothing of the rest; a scope naming nothing is refused with its reason."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from corral.master import state_scope, views
from corral.master.core import events as ev
from corral.master.core.config import MasterConfig
from corral.master.core.types import TaskState
from corral.master.wire.convert import WireError
from corral.v1 import common_pb2 as pb
from corral.v1 import operator_pb2 as op
from tests.unit.core_harness import Harness, status, task


def _cluster() -> tuple[Harness, list[str], list[str]]:
    """Three agents (two share a hostname), two frameworks of two roles, each with a live and an
    ended task on every agent; one task id ("same-id") used by both frameworks."""
    h = Harness(MasterConfig(agent_timeout=10**6))
    a1, _ = h.add_agent(hostname="rack1")
    a2, _ = h.add_agent(hostname="shared")
    a3, _ = h.add_agent(hostname="shared")
    web, _ = h.subscribe("web", role="web")
    batch, _ = h.subscribe("batch", role="batch")
    launched: set[tuple[str, str]] = set()
    for _ in range(6):  # offer rounds until each framework has launched on each agent
        for batch_of_offers in h.allocate():
            fid = batch_of_offers.framework_id
            for offer in batch_of_offers.offers:
                if (fid, offer.agent_id) in launched:  # for the other framework, then
                    h.handle(ev.Decline(**h.call_base(fid), offer_ids=(offer.offer_id,)))
                    continue
                n = len(launched)
                live, ended = task(f"live-{n}"), task(f"ended-{n}")
                shared = () if fid in {f for f, _ in launched} else (task("same-id"),)
                h.accept(fid, [offer.offer_id], live, ended, *shared, refuse=0)
                h.agent_updates(
                    offer.agent_id,
                    status(live.task_id, fid, offer.agent_id, TaskState.RUNNING),
                    status(ended.task_id, fid, offer.agent_id, TaskState.FINISHED, exit_code=0),
                )
                launched.add((fid, offer.agent_id))
    assert len(launched) == 6, launched
    return h, [a1, a2, a3], [web, batch]


def _keys(state: op.State) -> dict[str, list[bytes]]:
    return {
        "agents": [a.SerializeToString() for a in state.agents],
        "frameworks": [f.SerializeToString() for f in state.frameworks],
        "tasks": [t.SerializeToString() for t in state.tasks],
        "offers": [o.SerializeToString() for o in state.offers],
        "roles": [r.SerializeToString() for r in state.roles],
        "priority_classes": [c.SerializeToString() for c in state.priority_classes],
    }


def _whole_of(
    whole: op.State,
    agents: Callable[[Any], bool] = lambda a: False,
    frameworks: Callable[[Any], bool] = lambda f: False,
    tasks: Callable[[Any], bool] = lambda t: False,
    offers: Callable[[Any], bool] = lambda o: False,
    roles: Callable[[Any], bool] = lambda r: False,
) -> dict[str, list[bytes]]:
    """The whole state's entries that pass the filters, in the whole state's order."""
    return {
        "agents": [a.SerializeToString() for a in whole.agents if agents(a)],
        "frameworks": [f.SerializeToString() for f in whole.frameworks if frameworks(f)],
        "tasks": [t.SerializeToString() for t in whole.tasks if tasks(t)],
        "offers": [o.SerializeToString() for o in whole.offers if offers(o)],
        "roles": [r.SerializeToString() for r in whole.roles if roles(r)],
        "priority_classes": [c.SerializeToString() for c in whole.priority_classes],
    }


def _sorted(d: dict[str, list[bytes]]) -> dict[str, list[bytes]]:
    return {k: sorted(v) for k, v in d.items()}


def _scoped_as_whole(h: Harness, request: op.GetStateRequest, **filters: Any) -> op.State:
    """The scoped state, after checking it holds exactly the whole state's entries that pass
    ``filters`` (as ``_whole_of`` takes them), in any order."""
    whole = views.state_pb(h.core)
    scoped = state_scope.scoped_state_pb(h.core, request)
    assert _sorted(_keys(scoped)) == _sorted(_whole_of(whole, **filters))
    return scoped


def test_no_scope_is_the_whole_state() -> None:
    h, _, _ = _cluster()
    assert state_scope.scoped_state_pb(h.core, op.GetStateRequest()) == views.state_pb(h.core)


def test_an_agent_by_id_has_its_tasks_live_and_ended_and_its_offers() -> None:
    h, (a1, _, _), _ = _cluster()
    h.subscribe("third")
    h.allocate()  # the third framework's outstanding offers, to find in it
    scoped = _scoped_as_whole(
        h,
        op.GetStateRequest(agent=a1),
        agents=lambda a: a.info.id == a1,
        tasks=lambda t: t.info.agent_id == a1,
        offers=lambda o: o.agent_id == a1,
    )
    assert len(scoped.tasks) >= 4 and len(scoped.offers) >= 1  # both frameworks' live and ended
    states = {t.status.state for t in scoped.tasks}
    assert states >= {pb.TASK_STATE_RUNNING, pb.TASK_STATE_FINISHED}


def test_an_agent_by_a_shared_hostname_gives_every_agent_of_it() -> None:
    h, (_, a2, a3), _ = _cluster()
    _scoped_as_whole(
        h,
        op.GetStateRequest(agent="shared"),
        agents=lambda a: a.info.id in (a2, a3),
        tasks=lambda t: t.info.agent_id in (a2, a3),
    )
    assert state_scope.scoped_state_pb(h.core, op.GetStateRequest(agent="nowhere")).agents == []


def test_a_framework_has_its_tasks_and_offers_and_no_other() -> None:
    h, _, (web, _) = _cluster()
    h.allocate()
    scoped = _scoped_as_whole(
        h,
        op.GetStateRequest(framework_id=web),
        frameworks=lambda f: f.info.id == web,
        tasks=lambda t: t.info.framework_id == web,
        offers=lambda o: o.framework_id == web,
    )
    assert len(scoped.tasks) == 7  # a live and an ended task on each of 3 agents, and same-id


def test_a_task_id_used_by_two_frameworks_gives_both_with_their_agents_and_frameworks() -> None:
    h, _, (web, batch) = _cluster()
    whole = views.state_pb(h.core)
    ours = {t.info.agent_id for t in whole.tasks if t.info.task_id == "same-id"}
    scoped = _scoped_as_whole(
        h,
        op.GetStateRequest(task=op.TaskRef(task_id="same-id")),
        agents=lambda a: a.info.id in ours,
        frameworks=lambda f: f.info.id in (web, batch),
        tasks=lambda t: t.info.task_id == "same-id",
    )
    assert sorted(t.info.framework_id for t in scoped.tasks) == sorted([web, batch])
    # An ended task is found too; with framework_id, only that framework's.
    ended = next(
        t.info.task_id
        for t in whole.tasks
        if t.info.framework_id == batch and t.status.state == pb.TASK_STATE_FINISHED
    )
    request = op.GetStateRequest(task=op.TaskRef(task_id=ended, framework_id=batch))
    (only,) = state_scope.scoped_state_pb(h.core, request).tasks
    assert (only.info.task_id, only.info.framework_id) == (ended, batch)


def test_a_role_has_its_frameworks() -> None:
    h, _, (web, _) = _cluster()
    scoped = _scoped_as_whole(
        h,
        op.GetStateRequest(role="web"),
        frameworks=lambda f: f.info.id == web,
        roles=lambda r: r.role == "web",
    )
    assert len(scoped.roles) == 1


@pytest.mark.parametrize(
    ("request_", "reason"),
    [
        (op.GetStateRequest(agent=""), "scope agent is empty"),
        (op.GetStateRequest(task=op.TaskRef(framework_id="F1")), "scope task.task_id is empty"),
        (op.GetStateRequest(role="r" * 2000), "scope role is 2000 characters"),
    ],
)
def test_a_scope_naming_nothing_is_refused_with_its_reason(
    request_: op.GetStateRequest, reason: str
) -> None:
    h, _, _ = _cluster()
    with pytest.raises(WireError, match=reason):
        state_scope.scoped_state_pb(h.core, request_)
