"""The autoscaler's configuration and decisions (corral/autoscaler/config.py, policy.py,
expanders.py), sans-IO: the master's what-if answers are given as data of the shape
master/core/simulation.py answers (tests/unit/test_simulation.py holds that side)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from corral.autoscaler import expanders
from corral.autoscaler.config import Config, ConfigError, parse
from corral.autoscaler.policy import CREATING, DRAINING, READY, AgentSeen, Policy

GROUPS: list[dict[str, Any]] = [
    {
        "name": "small",
        "min": 0,
        "max": 4,
        "template": {"resources": "cpus:2;mem:2048", "attributes": {"zone": "a"}},
        "priority": 1,
        "price": 1.0,
    },
    {
        "name": "big",
        "min": 0,
        "max": 2,
        "template": {"resources": "cpus:8;mem:8192", "taints": ["gpu=true:NoSchedule"]},
        "priority": 5,
        "price": 5.0,
    },
]


def config(**options: Any) -> Config:
    return parse({"node-groups": GROUPS, **options})


def pending(demand: str = "work", **fields: Any) -> dict[str, Any]:
    return {
        "framework_id": "F1",
        "demand": demand,
        "unmet": 3,
        "priority": 0,
        "gang": False,
        "schedulable": False,
        "tasks_wanted": 3,
        "expendable": False,
        "not_placed": {},
        **fields,
    }


def option(
    group: str, nodes: int, tasks: int = 3, demand: str = "work", waste: float = 0.0
) -> dict[str, Any]:
    return {
        "group": group,
        "nodes": nodes,
        "tasks": tasks,
        "demands": [{"framework_id": "F1", "demand": demand, "tasks": tasks}],
        "waste_cpus": waste,
        "waste_mem": waste,
    }


def answer(
    *options: dict[str, Any],
    pend: list[dict[str, Any]] | None = None,
    removals: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return {
        "pending": pend if pend is not None else [pending()],
        "options": list(options),
        "removals": removals or [],
    }


# --- configuration ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("groups", "message"),
    [
        ([{**GROUPS[0], "min": 5}], "node group small: min 5 is greater than max 4"),
        ([{**GROUPS[0], "provider": "cloudy"}], "node group small: unknown provider 'cloudy'"),
        (
            [{**GROUPS[0], "template": {"resources": "disk:10"}}],
            "node group small: template: resources hold nothing a task could use",
        ),
        (
            [{**GROUPS[0], "template": {"resources": "cpus:1", "taints": ["nope"]}}],
            "node group small: template: taint 'nope' must look like key=value:Effect",
        ),
        ([GROUPS[0], GROUPS[0]], "node group 'small' is named twice"),
        ([], "node-groups must be a non-empty list"),
    ],
)
def test_a_bad_configuration_is_one_line_naming_the_problem(
    groups: list[dict[str, Any]], message: str
) -> None:
    with pytest.raises(ConfigError) as err:
        parse({"node-groups": groups})
    assert str(err.value).startswith(message)
    assert "\n" not in str(err.value)


def test_options_are_cluster_autoscalers_names() -> None:
    c = parse(
        {
            "node-groups": GROUPS,
            "scale-down-unneeded-time": 30,
            "new-pod-scale-up-delay": 5,
            "expander": "least-waste",
            "expendable-pods-priority-cutoff": -50,
        }
    )
    assert (c.options.scale_down_unneeded_time, c.options.new_pod_scale_up_delay) == (30.0, 5.0)
    assert c.options.expander == "least-waste"
    assert c.options.expendable_pods_priority_cutoff == -50
    with pytest.raises(ConfigError, match="unknown option 'scale-down-unneded-time'"):
        parse({"node-groups": GROUPS, "scale-down-unneded-time": 30})
    with pytest.raises(ConfigError, match="unknown expander 'cheapest'"):
        parse({"node-groups": GROUPS, "expander": "cheapest"})


# --- expanders ----------------------------------------------------------------------------


def test_each_expander_picks_by_its_rule() -> None:
    c = config()
    opts = [option("small", 2, tasks=3, waste=0.25), option("big", 1, tasks=2, waste=0.5)]
    rng = random.Random(0)
    assert expanders.choose("most-pods", opts, c, rng)["group"] == "small"
    assert expanders.choose("least-waste", opts, c, rng)["group"] == "small"
    assert expanders.choose("priority", opts, c, rng)["group"] == "big"
    # price per task: small 2 x 1.0 / 3, big 1 x 5.0 / 2
    assert expanders.choose("price", opts, c, rng)["group"] == "small"
    picks = {expanders.choose("random", opts, c, random.Random(s))["group"] for s in range(20)}
    assert picks == {"small", "big"}
    again = [expanders.choose("random", opts, c, random.Random(7))["group"] for _ in range(3)]
    assert len(set(again)) == 1  # a seed replays


# --- scale up -----------------------------------------------------------------------------


def test_pending_work_scales_up_once_and_waits_for_its_upcoming_nodes() -> None:
    p = Policy(config(expander="least-waste"))
    plan = p.evaluate(
        answer(option("small", 2, waste=0.25), option("big", 1, waste=0.6)), [], 100.0
    )
    assert [n.name for n in plan.create] == ["small-1", "small-2"]
    assert all(n.phase == CREATING for n in plan.create)
    assert [e.reason for e in plan.events] == ["TriggeredScaleUp"]
    assert "group small: +2 nodes (small-1, small-2)" in plan.events[0].message
    # The same answer again (nodes not registered yet): nothing more is asked for.
    plan = p.evaluate(answer(option("small", 2), option("big", 1)), [], 101.0)
    assert plan.create == []
    assert [(e.reason, e.message) for e in plan.events] == [
        ("NotTriggerScaleUp", "waiting for upcoming nodes: small-1, small-2")
    ]
    # A restart restores the records: still no second scale-up.
    q = Policy(config(expander="least-waste"))
    q.restore(list(p.nodes.values()), list(p.groups.values()))
    assert q.evaluate(answer(option("small", 2)), [], 102.0).create == []
    assert q.groups["small"].next_seq == 3


def test_the_max_new_of_each_group_counts_its_nodes_and_the_total() -> None:
    p = Policy(config(**{"max-nodes-total": 5}))
    p.evaluate(answer(option("small", 3)), [], 0.0)
    fields = p.simulate_request()
    assert {e["group"].name: e["max_new"] for e in fields["groups"]} == {"small": 1, "big": 2}


def test_why_no_scale_up_names_each_group() -> None:
    p = Policy(config())
    pend = [pending(not_placed={"small": "group at max", "big": "taint gpu=true:NoSchedule"})]
    plan = p.evaluate(answer(pend=pend), [], 0.0)
    assert [(e.reason, e.subject, e.message) for e in plan.events] == [
        ("NotTriggerScaleUp", "F1/work", "big: taint gpu=true:NoSchedule; small: group at max")
    ]
    assert p.evaluate(answer(pend=pend), [], 1.0).events == []  # said once while it holds
    expendable = [pending(expendable=True, priority=-100)]
    (e,) = p.evaluate(answer(pend=expendable), [], 2.0).events
    assert e.message == "priority -100 is below the priority cutoff -10"


def test_new_pod_scale_up_delay() -> None:
    p = Policy(config(**{"new-pod-scale-up-delay": 10}))
    assert p.evaluate(answer(option("small", 1)), [], 0.0).create == []
    assert p.evaluate(answer(option("small", 1)), [], 9.0).create == []
    assert len(p.evaluate(answer(option("small", 1)), [], 10.0).create) == 1


def test_a_node_that_never_registers_is_deleted_and_its_group_backs_off() -> None:
    p = Policy(
        config(**{"max-node-provision-time": 60, "initial-node-group-backoff-duration": 100})
    )
    (_node,) = p.evaluate(answer(option("small", 1), option("big", 1)), [], 0.0).create
    plan = p.evaluate(answer(option("small", 1), option("big", 1)), [], 60.0)
    assert [n.name for n in plan.timed_out] == ["small-1"]
    assert "ScaleUpTimedOut" in [e.reason for e in plan.events]
    assert p.groups["small"].backoff_until == 160.0
    # Backed off, the other group is chosen; small's option is not.
    assert [n.group for n in plan.create] == ["big"]


def test_registration_makes_a_node_ready_and_ends_the_backoff() -> None:
    p = Policy(config())
    (node,) = p.evaluate(answer(option("small", 1)), [], 0.0).create
    p.groups["small"].failures = 2
    plan = p.evaluate(answer(pend=[]), [AgentSeen("A9", "small-1", True, 0)], 5.0)
    assert plan.registered == [node] and node.phase == READY and node.agent_id == "A9"
    assert p.groups["small"].failures == 0


# --- scale down ---------------------------------------------------------------------------


def _ready_policy(**options: Any) -> Policy:
    p = Policy(
        config(**{"scale-down-unneeded-time": 60, "scale-down-delay-after-add": 0, **options})
    )
    p.evaluate(answer(option("small", 2)), [], 0.0)
    agents = [AgentSeen("A1", "small-1", True, 0), AgentSeen("A2", "small-2", True, 1)]
    p.evaluate(answer(pend=[]), agents, 1.0)
    return p


def removal(agent: str, ok: bool, reason: str = "") -> dict[str, Any]:
    return {"agent_id": agent, "removable": ok, "reason": reason, "utilization": 0.0}


def test_an_unneeded_node_is_drained_after_the_unneeded_time_then_deleted() -> None:
    p = _ready_policy()
    assert p.simulate_request()["remove"] == ["A1", "A2"]
    gang = "holds a member of gang F1/train (task m0)"
    removals = [removal("A1", True), removal("A2", False, gang)]
    agents = [AgentSeen("A1", "small-1", True, 0), AgentSeen("A2", "small-2", True, 1)]
    plan = p.evaluate(answer(pend=[], removals=removals), agents, 10.0)
    assert plan.drain == []
    assert [(e.reason, e.subject, e.message) for e in plan.events] == [
        ("Unremovable", "small-2", gang)
    ]
    plan = p.evaluate(answer(pend=[], removals=removals), agents, 70.0)
    assert [n.name for n in plan.drain] == ["small-1"] and plan.drain[0].phase == DRAINING
    # Drained (no task left): deleted, ScaleDown.
    plan = p.evaluate(answer(pend=[], removals=removals), agents, 71.0)
    assert [n.name for n in plan.delete] == ["small-1"]
    assert ("ScaleDown", "small-1") in [(e.reason, e.subject) for e in plan.events]
    assert "small-1" not in p.nodes


def test_never_below_min_and_not_right_after_a_scale_up() -> None:
    p = _ready_policy()
    p.config = parse(
        {"node-groups": [{**GROUPS[0], "min": 2}, GROUPS[1]], "scale-down-unneeded-time": 60}
    )
    removals = [removal("A1", True), removal("A2", True)]
    agents = [AgentSeen("A1", "small-1", True, 0), AgentSeen("A2", "small-2", True, 0)]
    p.evaluate(answer(pend=[], removals=removals), agents, 10.0)
    plan = p.evaluate(answer(pend=[], removals=removals), agents, 80.0)
    assert plan.drain == []
    assert {e.message for e in plan.events} == {"group small is at its min 2"}

    q = _ready_policy(**{"scale-down-delay-after-add": 600})
    q.evaluate(answer(pend=[], removals=removals), agents, 10.0)
    plan = q.evaluate(answer(pend=[], removals=removals), agents, 80.0)
    assert plan.drain == [] and "a scale-up happened less than 600 s ago" in plan.events[0].message


def test_a_refused_drain_makes_the_node_ready_again_and_deletes_nothing() -> None:
    p = _ready_policy()
    removals = [removal("A1", True), removal("A2", False, "busy")]
    agents = [AgentSeen("A1", "small-1", True, 1), AgentSeen("A2", "small-2", True, 1)]
    p.evaluate(answer(pend=[], removals=removals), agents, 10.0)
    (node,) = p.evaluate(answer(pend=[], removals=removals), agents, 70.0).drain
    e = p.drain_refused(node, "disruption budget web (min_available 2): ...", 70.0)
    assert (e.reason, node.phase) == ("ScaleDownFailed", READY)
    # Long past the drain grace, its task still running: it is not deleted, and its unneeded
    # time started over (drained again only after another scale-down-unneeded-time).
    removals = [removal("A1", False, "disruption budget web"), removal("A2", False, "busy")]
    plan = p.evaluate(answer(pend=[], removals=removals), agents, 500.0)
    assert plan.delete == [] and plan.drain == [] and p.nodes["small-1"].phase == READY
