"""spread-pending: instances spread over zones with max_skew 1 stay pending when one zone is
too small, and `corral explain` says why; ScheduleAnyway places them anyway. The app runs on
the shipped serving framework."""

from __future__ import annotations

import asyncio
import json
import sys
from collections import Counter
from dataclasses import dataclass

from corral.frameworks import sdk
from corral.frameworks.sdk.testing import LocalCluster
from corral.scenarios.base import Figures, Scenario, ScenarioError, Timeline, must, until
from corral.scenarios.workloads import LONG, ServingRun


@dataclass(frozen=True)
class Size:
    big: int  # cpus of zones a and b
    small: int  # cpus of zone c
    instances: int
    settle: float  # seconds given to place what can be placed


SIZES = {"small": Size(4, 1, 6, 2.0), "full": Size(8, 2, 9, 4.0)}


def _agents(size: str) -> list[tuple[str, str, dict[str, str]]]:
    s = SIZES[size]
    shape = "cpus:{};mem:16384;disk:1000"
    return [
        ("zone-a", shape.format(s.big), {"zone": "a"}),
        ("zone-b", shape.format(s.big), {"zone": "b"}),
        ("zone-c", shape.format(s.small), {"zone": "c"}),
    ]


async def explain(master: str, framework_id: str) -> str:
    """What `corral explain FRAMEWORK` says of the pending demands (the CLI itself, run as a
    user would)."""
    proc = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "corral.cli.main", "explain", framework_id, "-o", "json"),
        *("--master", master),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    if proc.returncode != 0:
        raise ScenarioError(f"corral explain failed: {err.decode().strip()}")
    pending = json.loads(out)["pending_demands"]
    return "; ".join(d["summary"] for d in pending)


async def _where(cluster: LocalCluster) -> tuple[str, Counter[str]]:
    """The serving framework's id and its live instances per zone, from the master."""
    state = await cluster.state()
    fw = next(f for f in state.frameworks if f.info.name == "serving:web" and f.connected)
    zone = {a.info.id: a.info.attributes.get("zone", "") for a in state.agents}
    live = Counter(
        zone[t.info.agent_id]
        for t in state.tasks
        if t.info.framework_id == fw.info.id and not sdk.is_terminal(t.status.state)
    )
    return fw.info.id, live


async def _run(cluster: LocalCluster, tl: Timeline, with_fix: bool, size: str) -> Figures:
    s = SIZES[size]
    how = "ScheduleAnyway" if with_fix else "DoNotSchedule"
    tl.say(f"zones a and b have {s.big} cpus each, zone c {s.small}")
    app: dict[str, object] = {
        "id": "web",
        "command": f"sleep {LONG:g}",
        "instances": s.instances,
        "cpus": 1,
        "mem": 128,
        "spread": {"topology_key": "zone", "max_skew": 1, "when_unsatisfiable": how},
        "simulate_seconds": LONG,
    }
    web = ServingRun(app, cluster.master)
    try:
        tl.say(f"serving app web: {s.instances} instances of 1 cpu, max_skew 1 over zone ({how})")
        await must(lambda: web.running >= min(s.instances, 3), 30, "instances to run")
        full = await until(lambda: web.running >= s.instances, s.settle, "all placed")
        running = web.running
        framework_id, by_zone = await _where(cluster)
        zones = ", ".join(f"{z}={n}" for z, n in sorted(by_zone.items()))
        tl.say(f"{running}/{s.instances} running ({zones})")
        why = "" if full else await explain(cluster.master, framework_id)
        if why:
            tl.say(f"corral explain: {why}")
    finally:
        await web.close()
    return {
        "wanted": s.instances,
        "running": running,
        "pending": s.instances - running,
        "explain": why,
    }


SCENARIO = Scenario(
    name="spread-pending",
    summary="max_skew 1 over zones with one small zone leaves instances pending",
    symptom="instances stay pending forever although zones a and b have free cpus",
    cause="max_skew 1 over zone: zone c is full, so a and b may not get further ahead of it "
    "(DoNotSchedule); corral explain names the spread rule on a and b and no room on c",
    fix="whenUnsatisfiable ScheduleAnyway (spread is a preference), or more capacity in zone c",
    agents=_agents,
    run=_run,
)
