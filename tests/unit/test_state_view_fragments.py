"""The whole state view keeps each agent's, task's and demand's JSON between calls
(views._Fragments, issue #48): after each change below the view shows the change, and is the
same document the State message gives (what it was before the fragments were kept); GetState's
whole answer, kept the same way as bytes (views.state_wire), parses to that message."""

from __future__ import annotations

import json
from typing import Any

from corral.master import views
from corral.master.core import events as ev
from corral.master.core.config import MasterConfig
from corral.master.core.types import AgentUsage, Requester, TaskState, TaskUsage
from corral.master.http import state_json as wire_json
from corral.priority import PriorityClass
from corral.v1 import operator_pb2
from tests.unit.core_harness import Harness, demand, status, task


def _usage(used: float) -> AgentUsage:
    return AgentUsage(1.0, 4096.0, used, 4096.0 - used, 0.5, "", 0.0, "", 1.0, 512.0, "cgroup-v1")


def _view(h: Harness, **filters: Any) -> dict[str, Any]:
    """The kept view, checked against the one made whole from the State message."""
    kept = views.state_json(h.core, **filters)
    kept.pop("summary")
    whole = views.state_pb(h.core, **filters)
    made = wire_json.state(whole)
    assert json.dumps(kept) == json.dumps(made)  # same content, same key order
    if not filters:  # GetState's whole answer, its agents' and tasks' parts kept too
        assert operator_pb2.State.FromString(views.state_wire(h.core)) == whole
    return kept


def _agent(view: dict[str, Any], aid: str) -> dict[str, Any]:
    [a] = [a for a in view["agents"] if a["id"] == aid]
    return a


def test_each_change_shows_in_the_next_view() -> None:
    h = Harness(MasterConfig(agent_timeout=10**6))
    aid, _ = h.add_agent()
    other, _ = h.add_agent()
    fid, _ = h.subscribe("fw")
    assert _agent(_view(h), aid)["tasks"] == 0
    # Offers made, then a task launched from one: the agent's offered, used and task count.
    [offer] = [o for o in h.offers_for(fid) if o.agent_id == aid]
    assert _agent(_view(h), aid)["offered"]["cpus"] == 4.0
    h.accept(fid, [offer.offer_id], task("t1", "cpus:1;mem:128"), refuse=0)
    view = _view(h)
    assert (_agent(view, aid)["tasks"], _agent(view, aid)["used"]["cpus"]) == (1, 1.0)
    assert _agent(view, aid)["offered"]["cpus"] == 0.0
    assert [t["state"] for t in view["tasks"]] == ["STAGING"]
    # Its status: the task's fragment is made again.
    h.agent_updates(aid, status("t1", fid, aid, TaskState.RUNNING, uuid=b"u1"))
    assert [t["state"] for t in _view(h)["tasks"]] == ["RUNNING"]
    # Usage measured, twice: the agent's and the task's.
    for used in (300.0, 400.0):
        h.handle(
            ev.AgentUsageReport(
                **h.base(),
                agent_id=aid,
                connection=h.connections[aid],
                usage=_usage(used),
                tasks=(TaskUsage(fid, "t1", 0.25, used / 4),),
            )
        )
        view = _view(h)
        assert _agent(view, aid)["usage"]["mem_used"] == used
        assert view["tasks"][0]["usage"] == {"cpus": 0.25, "mem": used / 4}
    # Maintenance, a heartbeat's time, a lost stream: the agent's state and times.
    h.handle(ev.Cordon(**h.base(), agent_id=aid, requester=Requester("t")))
    assert _agent(_view(h), aid)["maintenance"]["mode"] == "cordoned"
    # The task ends (at the same time: only the agent's tasks change): it moves to the ended
    # tasks, the agent holds nothing.
    h.agent_updates(aid, status("t1", fid, aid, TaskState.FINISHED, uuid=b"u2"))
    view = _view(h)
    assert (_agent(view, aid)["tasks"], [t["state"] for t in view["tasks"]]) == (0, ["FINISHED"])
    assert _view(h, completed=False)["tasks"] == []
    h.now += 5.0
    h.close_agent(other)
    assert _agent(_view(h), other)["connected"] is False


def test_a_demands_fragment_follows_its_tasks_and_the_priority_classes() -> None:
    h = Harness(MasterConfig(agent_timeout=10**6))
    aid, _ = h.add_agent()
    fid, _ = h.subscribe("fw")
    h.handle(ev.SetPriorityClass(**h.base(), priority_class=PriorityClass("gold", 10)))
    h.set_demands(fid, demand("web", "cpus:1;mem:128", count=2, priority_class="gold"))
    [fw] = _view(h)["frameworks"]
    assert (fw["demands"][0]["priority"], fw["demands"][0]["unmet"], fw["class_priority"]) == (
        10,
        2,
        10,
    )
    [offer] = [o for o in h.offers_for(fid) if o.agent_id == aid]
    h.accept(fid, [offer.offer_id], task("w1", "cpus:1;mem:128", demand="web"), refuse=0)
    [fw] = _view(h)["frameworks"]
    assert (fw["demands"][0]["tasks"], fw["demands"][0]["unmet"]) == (1, 1)
    h.handle(ev.SetPriorityClass(**h.base(), priority_class=PriorityClass("gold", 20)))
    [fw] = _view(h)["frameworks"]
    assert (fw["demands"][0]["priority"], fw["class_priority"]) == (20, 20)
    h.set_demands(fid)
    [fw] = _view(h)["frameworks"]
    assert fw["demands"] == []
