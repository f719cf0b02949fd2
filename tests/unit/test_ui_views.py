"""The web UI's views over the core's state (master/ui): groups and totals, pages of agents and
tasks with their filters and order, agents' statuses, frameworks' shares, pending demands, the
utilisation sample, and the query checks that turn bad input into a reason."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from corral.master.core import events as ev
from corral.master.core.config import MasterConfig
from corral.master.core.types import TaskState
from corral.master.ui import cluster, frameworks, params, tasks
from corral.placement import Taint, TaintEffect
from tests.unit.core_harness import Harness, demand, status, task


def _cluster() -> tuple[Harness, dict[str, str], str]:
    """Three agents (zones a, a, b; the b one tainted), a framework with two tasks on the
    first agent and one ended on the second."""
    h = Harness(MasterConfig(agent_timeout=10**6))
    spot = Taint("spot", "true", TaintEffect.NO_SCHEDULE)
    ids = {}
    for name, zone, taints in (("x", "a", ()), ("y", "a", ()), ("z", "b", (spot,))):
        aid, _ = h.add_agent(hostname=name, attributes={"zone": zone}, taints=taints)
        ids[name] = aid
    fid, _ = h.subscribe("web", role="web")
    offers = {o.agent_id: o for o in h.offers_for(fid)}
    for agent, names in ((ids["x"], ("t1", "t2")), (ids["y"], ("t3",))):
        h.accept(fid, [offers[agent].offer_id], *(task(n, "cpus:1;mem:128") for n in names))
    h.now += 1
    ended = replace(status("t3", fid, ids["y"], TaskState.FINISHED), timestamp=h.now)
    h.agent_updates(ids["y"], ended)
    return h, ids, fid


def test_overview_groups_by_zone_with_totals_used_and_taints() -> None:
    h, _, _ = _cluster()
    data = cluster.overview(h.core, {})
    assert data["group_by"] == "zone" and data["attribute_keys"] == ["zone"]
    groups = {g["key"]: g for g in data["groups"]}
    assert groups["a"]["agents"] == 2 and groups["a"]["total"]["cpus"] == 8
    assert groups["a"]["used"]["cpus"] == 2  # t1 and t2; t3 ended
    assert groups["b"]["taints"] == {"spot=true:NoSchedule": 1}
    assert data["by_status"]["active"] == 3 and data["tasks_active"] == 2
    assert data["total"]["cpus"] == 12 and data["used"]["cpus"] == 2
    one = cluster.overview(h.core, {"group_by": ""})
    assert [g["key"] for g in one["groups"]] == ["all agents"]
    other = cluster.overview(h.core, {"group_by": "rack"})  # an attribute no agent has
    assert [(g["key"], g["agents"]) for g in other["groups"]] == [("(none)", 3)]


def test_agents_page_filters_sorts_and_pages() -> None:
    h, ids, _ = _cluster()
    page = cluster.agents_page(h.core, {"sort": "cpus", "limit": "1"})
    assert page["total"] == 3 and [a["id"] for a in page["items"]] == [ids["x"]]
    assert page["items"][0]["used"]["cpus"] == 2
    in_a = cluster.agents_page(h.core, {"group_by": "zone", "group": "a"})
    assert {a["hostname"] for a in in_a["items"]} == {"x", "y"}
    found = cluster.agents_page(h.core, {"q": "Z"})  # hostnames, ids, attribute values
    assert [a["hostname"] for a in found["items"]] == ["z"]
    rest = cluster.agents_page(h.core, {"offset": "2", "limit": "5"})
    assert len(rest["items"]) == 1 and rest["offset"] == 2
    with pytest.raises(ValueError, match="group needs group_by"):
        cluster.agents_page(h.core, {"group": "a"})


def test_every_page_of_many_agents_is_a_slice_of_the_whole_order() -> None:
    """Shallow pages come from a bounded heap, deep ones from a sort: either way a page is the
    slice of the whole list in the order asked, agents registered in a shuffled id order."""
    import random

    h = Harness(MasterConfig(agent_timeout=10**6))
    names = [f"agent-{i:03d}" for i in range(300)]
    random.Random(7).shuffle(names)
    for name in names:
        h.add_agent(agent_id="", hostname=name)
    for sort in ("id", "hostname", "tasks"):
        whole = cluster.agents_page(h.core, {"sort": sort, "limit": "1000"})["items"]
        assert len(whole) == 300
        for offset, limit in ((0, 10), (10, 10), (35, 1), (250, 50), (290, 50)):
            page = cluster.agents_page(
                h.core, {"sort": sort, "offset": str(offset), "limit": str(limit)}
            )
            assert page["items"] == whole[offset : offset + limit], (sort, offset, limit)
    by_host = cluster.agents_page(h.core, {"sort": "hostname", "limit": "1000"})["items"]
    assert [a["hostname"] for a in by_host] == sorted(names)


def test_an_agent_without_its_stream_is_disconnected_then_unreachable() -> None:
    h, ids, _ = _cluster()
    h.close_agent(ids["z"])
    row = cluster.agents_page(h.core, {"q": "z"})["items"][0]
    assert row["status"] == "disconnected" and row["conditions"] == ["disconnected"]
    assert cluster.agents_page(h.core, {"status": "disconnected"})["total"] == 1
    h.now += 10**7  # past every agent's timeout; x and y are heard from, z is not
    for name in ("x", "y"):
        h.handle(
            ev.AgentHeartbeat(**h.base(), agent_id=ids[name], connection=h.connections[ids[name]])
        )
    h.tick()
    data = cluster.overview(h.core, {})
    assert data["by_status"]["unreachable"] == 1
    assert data["total"]["cpus"] == 8  # an unreachable agent's resources are not usable


def test_tasks_page_newest_first_with_filters() -> None:
    h, ids, fid = _cluster()
    page = tasks.tasks_page(h.core, {})
    assert page["items"][0]["id"] == "t3"  # changed last: it ended
    assert page["total"] == 3
    live = tasks.tasks_page(h.core, {"completed": "false"})
    assert {t["id"] for t in live["items"]} == {"t1", "t2"}
    ended = tasks.tasks_page(h.core, {"state": "FINISHED"})
    assert [t["id"] for t in ended["items"]] == ["t3"]
    on_y = tasks.tasks_page(h.core, {"agent_id": ids["y"]})
    assert [t["id"] for t in on_y["items"]] == ["t3"]
    of_fw = tasks.tasks_page(h.core, {"framework_id": fid, "q": "T2"})
    assert [t["id"] for t in of_fw["items"]] == ["t2"]
    detail = tasks.task_detail(h.core, "t3", "", [])
    assert detail is not None and detail["tasks"][0]["ended"] is True
    assert tasks.task_detail(h.core, "t9", "", []) is None


def test_frameworks_page_shares_tasks_by_state_and_roles() -> None:
    h, _, fid = _cluster()
    page = frameworks.frameworks_page(h.core, {})
    (row,) = page["items"]
    assert row["id"] == fid and row["role"] == "web"
    assert row["dominant_share"] == pytest.approx(2 / 12)  # 2 of 12 usable cpus
    assert row["tasks_by_state"] == {"STAGING": 2, "FINISHED": 1}
    assert [r["role"] for r in page["roles"]] == ["web"]
    assert frameworks.frameworks_page(h.core, {"state": "removed"})["total"] == 0


def test_pending_lists_unmet_demands_with_why_and_the_sample_counts_them() -> None:
    h, _, fid = _cluster()
    h.set_demands(fid, demand("huge", "cpus:64;mem:1", count=3))
    data = frameworks.pending(h.core, {}, h.now)
    (d,) = data["items"]
    assert (d["name"], d["unmet"], d["framework_id"]) == ("huge", 3, fid)
    assert "insufficient cpus" in d["summary"]
    assert d["reasons"][0] == {
        "reason": "insufficient cpus",
        "agents": 3,
        "sample_agents": d["reasons"][0]["sample_agents"],
    }
    assert data["unmet_tasks"] == 3
    with pytest.raises(KeyError):
        frameworks.pending(h.core, {"framework_id": "nope"}, h.now)
    point = cluster.sample(h.core)
    assert point["pending_tasks"] == 3 and point["used"]["cpus"] == 2
    assert point["total"]["cpus"] == 12 and point["tasks_active"] == 2


@pytest.mark.parametrize(
    ("query", "allowed", "reason"),
    [
        ([("limt", "1")], ("limit",), "unknown query parameter 'limt'"),
        ([("limit", "1"), ("limit", "2")], ("limit",), "limit is given twice"),
        ([("q", "x" * 300)], ("q",), "longer than 256"),
    ],
)
def test_query_checks(query: list[tuple[str, str]], allowed: tuple[str, ...], reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        params.query_of(query, allowed)


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        ({"limit": "0"}, "limit must be between 1 and 1000"),
        ({"limit": "1001"}, "limit must be between 1 and 1000"),
        ({"offset": "x"}, "offset must be an integer"),
    ],
)
def test_page_checks(query: dict[str, Any], reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        params.Page.of(query)


def test_the_page_preloads_every_module_it_imports() -> None:
    """index.html names each module (so the browser fetches them at once, not an import level
    at a time) and nothing that is not there."""
    import re
    from pathlib import Path

    from corral.master.ui.routes import STATIC

    page = (STATIC / "index.html").read_text()
    preloaded = set(re.findall(r'rel="modulepreload" href="/ui/static/([^"]+)"', page))
    modules = {
        p.relative_to(STATIC).as_posix()
        for p in Path(STATIC).rglob("*.js")
        if p.name != "env.js"  # a classic script, run first
    }
    assert preloaded == modules
    for name in re.findall(r'"[a-z/-]+": "/ui/static/([^"]+)"', page):  # the import map
        assert (STATIC / name).is_file(), name
