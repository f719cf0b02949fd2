"""What the master's state views tell operators: each agent's and framework's real state (not
just connected or not), a framework's placement rules, attributes as an operator writes them."""

from __future__ import annotations

from corral.cli.get_cmd import rows
from corral.master import views
from corral.master.core import events as ev
from corral.master.core.config import MasterConfig
from corral.placement import AttributeConstraint, ConstraintOp, Toleration
from tests.unit.core_harness import Harness, demand
from tests.unit.test_master_recovery import restarted, running_cluster


def _column(kind: str, h: Harness, name: str, wide: bool = False) -> dict[str, str]:
    """One column of ``corral get KIND`` over the core's state, by row id."""
    cols, table, _ = rows(kind, views.state_pb(h.core), wide=wide)
    i = cols.index(name)
    return {row[0]: row[i] for row in table}


def test_a_recovering_agent_and_a_disconnected_framework_say_so() -> None:
    config = MasterConfig(agent_reregister_timeout=300.0)
    h, registry, aid, fid, _ = running_cluster(config)
    h2 = restarted(registry, config, now=h.now + 30)
    state = views.state_pb(h2.core)
    (agent,) = state.agents
    assert (agent.state, agent.active) == ("recovering", False)
    (framework,) = state.frameworks
    assert (framework.state, framework.connected) == ("disconnected", False)
    assert _column("agents", h2, "STATE") == {aid: "recovering"}
    assert _column("frameworks", h2, "STATE") == {fid: "disconnected"}
    assert views.state_json(h2.core)["agents"][0]["state"] == "recovering"


def test_a_removed_framework_is_not_shown_as_disconnected() -> None:
    h = Harness(MasterConfig(agent_timeout=10**6))
    h.add_agent()
    live, _ = h.subscribe("live")
    gone, _ = h.subscribe("gone")
    h.handle(ev.Teardown(**h.call_base(gone)))
    assert _column("frameworks", h, "STATE") == {live: "subscribed", gone: "removed"}
    assert _column("agents", h, "STATE") == {"A1": "active"}


def test_a_frameworks_constraints_tolerations_and_demand_rules_are_shown() -> None:
    h = Harness(MasterConfig(agent_timeout=10**6))
    h.add_agent(attributes={"zone": "a"})
    zone_a_or_b = AttributeConstraint("zone", ConstraintOp.IN, ("a", "b"))
    fid, _ = h.subscribe(
        "web",
        offer_constraints=(zone_a_or_b,),
        tolerations=(Toleration("spot", "true", exists=True),),
    )
    on_ssd = AttributeConstraint("disk", ConstraintOp.EQUALS, ("ssd",))
    h.set_demands(fid, demand("db", count=2, constraints=(on_ssd,)), demand("cache"))

    record = views.state_json(h.core)["frameworks"][0]
    assert record["offer_constraints"] == ["zone in (a,b)"]
    assert record["tolerations"] == ["spot exists"]
    assert [d["constraints"] for d in record["demands"]] == [["disk=ssd"], []]

    info = views.state_pb(h.core).frameworks[0].info
    assert [(c.attribute, list(c.values)) for c in info.offer_constraints] == [("zone", ["a", "b"])]
    assert _column("frameworks", h, "CONSTRAINTS", wide=True) == {fid: "zone in (a,b)"}
    assert _column("frameworks", h, "TOLERATIONS", wide=True) == {fid: "spot exists"}
    assert _column("frameworks", h, "DEMANDS", wide=True) == {fid: "db 0/2 (disk=ssd), cache 0/1"}
    # Without -o wide the row stays short.
    assert "CONSTRAINTS" not in rows("frameworks", views.state_pb(h.core))[0]


def test_the_page_shows_attributes_as_an_operator_writes_them() -> None:
    h = Harness(MasterConfig(agent_timeout=10**6))
    h.add_agent(attributes={"zone": "a", "rack": "r1"})
    page = views.index_html(views.state_json(h.core, tasks=False))
    assert "<td>rack=r1, zone=a</td>" in page
    assert "{" not in page.split("<h2>Agents</h2>")[1]  # no Python dict repr


def test_cli_json_and_http_state_give_each_object_one_shape() -> None:
    # Issue #32: `corral get ... -o json` and /api/v1/state differed (ids nested in "info",
    # port ranges as {begin, end}). Both are master/http/state_json.py of the same message now.
    h = Harness(MasterConfig(agent_timeout=10**6))
    aid, _ = h.add_agent(resources="cpus:4;mem:4096;disk:100;ports:[31000-31009]")
    fid, _ = h.subscribe("web")
    h.set_demands(fid, demand("web", count=2, priority_class="serving"))
    (offer,) = h.offers_for(fid)
    from tests.unit.core_harness import task

    h.accept(fid, [offer.offer_id], task("t1", "cpus:1;mem:64;ports:[31003-31003]", demand="web"))
    http = views.state_json(h.core)
    state = views.state_pb(h.core)
    for kind in ("agents", "frameworks", "tasks", "offers"):
        assert rows(kind, state)[2] == http[kind], kind
    (task_record,) = http["tasks"]
    assert task_record["id"] == "t1" and task_record["resources"]["ports"] == [[31003, 31003]]
    assert http["agents"][0]["id"] == aid and http["agents"][0]["resources"]["ports"] == [
        [31000, 31009]
    ]


def test_the_cli_shape_needs_no_server_extra() -> None:
    import subprocess
    import sys

    code = (
        "import sys, corral.cli.get_cmd, corral.cli.describe_cmd, corral.master.http.state_json;"
        "bad = [m for m in sys.modules if m.split('.')[0] in "
        "('numpy', 'aiohttp', 'numba', 'psutil', 'prometheus_client', 'kazoo')];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
