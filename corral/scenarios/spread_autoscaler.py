"""spread-autoscaler: aggressive spread and an undersized node group are permanent Pending (the
seed: "TopologySpread conflicts with the Cluster Autoscaler"). A serving app spreads with
max_skew 1 over three zones whose zone c is full; `corral autoscaler` has a node group per zone,
zone c's at its max (0). Zones a and b could take more, but the spread forbids it, and the
autoscaler, asking the master's own placement rules, adds no node there: NotTriggerScaleUp names
zone c's group at its max and the spread on a and b. The fix compared: zone c's group may grow
(max 2), and the autoscaler adds exactly one zone-c node. Figures: the longest a replica waited
(``pending_seconds``), nodes added per zone, what NotTriggerScaleUp said."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from corral.frameworks.sdk.testing import LocalCluster
from corral.scenarios.autoscaling import AutoscalerRun
from corral.scenarios.base import Figures, Scenario, Timeline, fresh_cluster, until
from corral.scenarios.workloads import LONG, ServingRun


@dataclass(frozen=True)
class Size:
    big: int  # cpus of zones a and b
    instances: int
    settle: float  # seconds the run waits for every replica


SIZES = {"small": Size(4, 6, 20.0), "full": Size(8, 9, 30.0)}


def _agents(size: str) -> list[tuple[str, str, dict[str, str]]]:
    s = SIZES[size]
    shape = "cpus:{};mem:16384;disk:1000"
    return [
        ("zone-a", shape.format(s.big), {"zone": "a"}),
        ("zone-b", shape.format(s.big), {"zone": "b"}),
        ("zone-c", shape.format(1), {"zone": "c"}),
    ]


@dataclass(frozen=True)
class Fix:
    """One way out, as its run sets the node groups and the spread."""

    zone_c_max: int
    expander: str = "least-waste"
    priorities: tuple[int, int, int] = (0, 0, 0)  # zone a, b, c's groups (the priority expander)
    when_unsatisfiable: str = "DoNotSchedule"


WITHOUT = Fix(zone_c_max=0)
# Balanced groups (each zone's may grow to 2), least waste: the fix the figures show.
RAISE_MAX = Fix(zone_c_max=2)
# The fixes compared with it, each on a fresh cluster: the priority expander preferring zone a
# (it cannot have it: the master's what-if offers only zone c's group), and the spread as a
# preference with zone c's group still at max 0.
COMPARED = {
    "raise_max_least_waste": RAISE_MAX,
    "raise_max_priority_zone_a_first": Fix(
        zone_c_max=2, expander="priority", priorities=(10, 5, 0)
    ),
    "schedule_anyway": Fix(zone_c_max=0, when_unsatisfiable="ScheduleAnyway"),
}


def _config(fix: Fix) -> dict[str, object]:
    groups = [
        {
            "name": f"zone-{z}-pool",
            "min": 0,
            "max": fix.zone_c_max if z == "c" else 2,
            "priority": priority,
            "simulate": True,
            "template": {"resources": "cpus:2;mem:16384;disk:1000", "attributes": {"zone": z}},
        }
        for z, priority in zip("abc", fix.priorities, strict=True)
    ]
    return {
        "scan-interval": 0.5,
        "expander": fix.expander,
        "scale-down-enabled": False,
        "node-groups": groups,
    }


async def _run(cluster: LocalCluster, tl: Timeline, with_fix: bool, size: str) -> Figures:
    figures = await _one(cluster, tl, RAISE_MAX if with_fix else WITHOUT, size)
    if not with_fix:
        return figures
    compared = {"raise_max_least_waste": _brief(figures)}
    for label, fix in COMPARED.items():
        if fix is RAISE_MAX:
            continue
        tl.say(f"compared, on a fresh cluster: {label}")
        async with fresh_cluster(SCENARIO, size, cluster.work_dir.parent / f"with_{label}") as c:
            compared[label] = _brief(await _one(c, tl, fix, size))
    for label, brief in compared.items():
        tl.say(f"{label}: {brief['running']}/{brief['running'] + brief['pending']} running, "
               f"longest wait {brief['pending_seconds']:.1f} s, nodes added "
               + ", ".join(f"{z}={n}" for z, n in brief["nodes_added"].items()))  # fmt: skip
    return {**figures, "compared": compared}


def _brief(figures: Figures) -> Figures:
    keys = (
        "running",
        "pending",
        "pending_seconds",
        "permanent_pending",
        "nodes_added",
        "scale_ups",
    )
    return {k: figures[k] for k in keys}


async def _one(cluster: LocalCluster, tl: Timeline, fix: Fix, size: str) -> Figures:
    s = SIZES[size]
    tl.say(f"zones a and b have {s.big} cpus each, zone c 1; node groups per zone, zone c's max "
           f"{fix.zone_c_max}; expander {fix.expander}")  # fmt: skip
    app: dict[str, object] = {
        "id": "web",
        "command": f"sleep {LONG:g}",
        "instances": s.instances,
        "cpus": 1,
        "mem": 128,
        "spread": {
            "topology_key": "zone",
            "max_skew": 1,
            "when_unsatisfiable": fix.when_unsatisfiable,
        },
        "simulate_seconds": LONG,
    }
    async with AutoscalerRun(cluster.master, _config(fix)) as autoscaler:
        web = ServingRun(app, cluster.master)
        try:
            started = tl.now()
            tl.say(f"serving app web: {s.instances} instances of 1 cpu, max_skew 1 over zone "
                   f"({fix.when_unsatisfiable})")  # fmt: skip
            full = await until(lambda: web.running >= s.instances, s.settle, "all placed")
            waited = tl.now() - started
            running = web.running
            tl.say(f"{running}/{s.instances} running after {waited:.1f} s")
            added = {g["name"]: g["nodes"] for g in await autoscaler.groups()}
            tl.say("nodes added: " + ", ".join(f"{k}={v}" for k, v in sorted(added.items())))
            # The events about zone c's group, as `corral describe nodegroup` shows them.
            events = (await autoscaler.get("/v1/nodegroups/zone-c-pool"))["events"]
            said = next((e["message"] for e in reversed(events)
                         if e["reason"] == "NotTriggerScaleUp"), "")  # fmt: skip
            if said:
                tl.say(f"NotTriggerScaleUp: {said}")
            up = [e["message"] for e in events if e["reason"] == "TriggeredScaleUp"]
            for m in up:
                tl.say(f"TriggeredScaleUp: {m}")
        finally:
            await web.close()
    per_zone = Counter({k.split("-")[1]: v for k, v in added.items()})
    return {
        "wanted": s.instances,
        "running": running,
        "pending": s.instances - running,
        # The longest a replica waited: the whole run when one never ran.
        "pending_seconds": round(waited, 1),
        "permanent_pending": not full,
        "nodes_added": dict(sorted(per_zone.items())),
        "scale_ups": len(up),
        "not_trigger_scale_up": said,
    }


SCENARIO = Scenario(
    name="spread-autoscaler",
    summary="max_skew 1 over zones with zone c's node group at its max: permanent Pending",
    symptom="a replica stays pending forever although the autoscaler could add nodes in "
    "zones a and b",
    cause="max_skew 1: zone c is full, a and b may not get further ahead of it; the autoscaler "
    "asks the master's placement rules, so it adds no node where the spread forbids the "
    "replica, and zone c's group is at its max (NotTriggerScaleUp says both)",
    fix="let zone c's node group grow (balanced groups per zone): one zone-c node, no Pending",
    agents=_agents,
    run=_run,
)
