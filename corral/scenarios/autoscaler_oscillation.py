"""autoscaler-oscillation: a gang of 8 without a bundle and an autoscaler fight (the seed: "a
partial gang leaves 7 of 8 workers holding GPUs and the autoscaler oscillates").

The cluster has 7 GPUs; `corral autoscaler` has a node group of 1-GPU nodes that take a few
seconds to boot (a cloud's minutes, scaled down: the command provider's create script waits
before it starts the agent). Without the fix the trainer takes GPUs as offered: 7 workers start
and hold their GPUs idle, the 8th is pending, and the autoscaler (which sees one pending task,
not a gang) adds one node. The trainer's patience runs out before the node boots: it releases
its 7 GPUs and retries after a backoff, as a job with a startup timeout does. The new node is
idle, so the autoscaler scales it down; the trainer's retry places 7 again, the 8th is pending
again, and the autoscaler adds a node again: an oscillation, for as long as one cares to watch.

With the fix the trainer asks for a gang (``min_member = 8``): the master places nothing until
all 8 fit, and its what-if tells the autoscaler the gang needs exactly one more node (its 8
members less the 7 the cluster can take). One scale-up of one node, no GPU held idle while it
boots, the gang runs on it, and a node holding a gang member is never scaled down.
"""

from __future__ import annotations

import asyncio
import re
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from corral.frameworks import sdk
from corral.frameworks.sdk.testing import LocalCluster
from corral.scenarios.autoscaling import AutoscalerRun
from corral.scenarios.base import Figures, Scenario, ScenarioError, Timeline, must
from corral.scenarios.workloads import GPU, Gang, Instances

WORKERS = 8
STATIC_GPUS = (4, 3)  # two agents: 7 GPUs, one short of the gang
BOOT_SECONDS = 4.0  # a new node's boot: the create script waits this long before the agent
PATIENCE = 1.0  # how long the trainer waits for its 8th worker once a node is on its way
SCAN = 0.3
UNNEEDED = 1.0  # scale-down-unneeded-time
DELAY_AFTER_ADD = 2.0  # scale-down-delay-after-add
GROUP = "gpu-pool"


@dataclass(frozen=True)
class Size:
    cycles: int  # scale-up, give up, scale-down rounds the run without the fix watches


SIZES = {"small": Size(2), "full": Size(3)}


def _agents(size: str) -> list[tuple[str, str, dict[str, str]]]:
    del size
    return [
        (f"gpu-{i}", f"cpus:8;mem:16384;disk:1000;gpus:{n}", {}) for i, n in enumerate(STATIC_GPUS)
    ]


def _create_script(state: Path) -> str:
    """The command provider's create: each node's agent starts after BOOT_SECONDS, in a session
    of its own (the autoscaler's delete is a SIGTERM to it; the scenario stops what is left)."""
    nodes = state / "nodes"
    agent = (
        f"sleep {BOOT_SECONDS:g}; exec {shlex.quote(sys.executable)} -m corral.cli.main agent "
        '--master "$CORRAL_MASTER" --name "$0" --resources "$CORRAL_NODE_RESOURCES" '
        '--simulate --work-dir "$1"'
    )
    return (
        f"mkdir -p {shlex.quote(str(nodes))}\n"
        "for n in $CORRAL_NODE_NAMES; do\n"
        f'  setsid sh -c {shlex.quote(agent)} "$n" {shlex.quote(str(nodes))}/"$n" '
        f'</dev/null >>{shlex.quote(str(nodes))}/"$n.log" 2>&1 &\n'
        '  echo "$n $!"\n'
        "done\n"
    )


def _config(state: Path) -> dict[str, Any]:
    return {
        "scan-interval": SCAN,
        "expander": "least-waste",
        "scale-down-unneeded-time": UNNEEDED,
        "scale-down-delay-after-add": DELAY_AFTER_ADD,
        "max-node-provision-time": 60,
        "drain-grace-seconds": 5,
        "node-groups": [
            {
                "name": GROUP,
                "min": 0,
                "max": 4,
                "provider": "command",
                "command": {
                    "create": _create_script(state),
                    "delete": 'kill "$CORRAL_NODE_HANDLE" 2>/dev/null || true',
                },
                "template": {"resources": "cpus:4;mem:8192;disk:1000;gpus:1"},
            }
        ],
    }


class Patient(Instances):
    """Takes GPUs as offered (no bundle); while ``accepting`` is off it declines everything.
    Records when each of its tasks started and ended (wall clock, as the autoscaler's events)."""

    def __init__(self) -> None:
        super().__init__("worker", WORKERS, cpus=1, mem=256, gpus=1)
        self.accepting = True
        self.spans: dict[str, list[float]] = {}  # task id -> [started, ended?]

    async def offers(self, driver: sdk.Driver, offers: list[sdk.Offer]) -> None:
        if not self.accepting:
            await driver.decline(offers, refuse_seconds=1)
            return
        await super().offers(driver, offers)

    async def status(self, driver: sdk.Driver, status: sdk.TaskStatus) -> None:
        await super().status(driver, status)
        if status.state == sdk.TaskState.TASK_STATE_RUNNING:
            self.spans.setdefault(status.task_id, [time.time()])
        elif sdk.is_terminal(status.state) and len(self.spans.get(status.task_id, [])) == 1:
            self.spans[status.task_id].append(time.time())


_UP = re.compile(r"^group (\S+): \+(\d+) node")
_DOWN = re.compile(r" of group (\S+) ")


def oscillations(events: list[dict[str, Any]]) -> int:
    """Scale-ups of a group for a demand that group already scaled up for, after a scale-down
    of that group came between: the autoscaler undoing and redoing the same work."""
    count = 0
    grown: set[tuple[str, str]] = set()  # (group, demand) scaled up for
    shrunk_since: dict[tuple[str, str], bool] = {}
    for e in sorted(events, key=lambda e: float(e["at"])):
        if e["reason"] == "TriggeredScaleUp" and (m := _UP.match(e["message"])):
            key = (m.group(1), str(e["subject"]))
            if key in grown and shrunk_since.get(key):
                count += 1
            grown.add(key)
            shrunk_since[key] = False
        elif e["reason"] == "ScaleDown" and (m := _DOWN.search(e["message"])):
            for key in grown:
                if key[0] == m.group(1):
                    shrunk_since[key] = True
    return count


def _count(events: list[dict[str, Any]], reason: str) -> int:
    return sum(1 for e in events if e["reason"] == reason)


class _Watch:
    """The autoscaler's events and its nodes' registrations, polled."""

    def __init__(self, autoscaler: AutoscalerRun) -> None:
        self.autoscaler = autoscaler
        self.events: list[dict[str, Any]] = []
        self.registered: dict[str, float] = {}  # node name -> when its agent registered

    async def poll(self) -> None:
        self.events = await self.autoscaler.events()
        for n in (await self.autoscaler.get("/v1/nodes"))["nodes"]:
            if n.get("registered_at") is not None:
                self.registered.setdefault(n["name"], float(n["registered_at"]))

    async def until(self, reason: str, more_than: int, timeout: float, what: str) -> None:
        end = time.monotonic() + timeout
        while True:
            await self.poll()
            if _count(self.events, reason) > more_than:
                return
            if time.monotonic() >= end:
                raise ScenarioError(f"timed out after {timeout:g} s waiting for {what}")
            await asyncio.sleep(0.1)


async def _run(cluster: LocalCluster, tl: Timeline, with_fix: bool, size: str) -> Figures:
    cycles = SIZES[size].cycles
    tl.say(f"{sum(STATIC_GPUS)} GPUs; node group {GROUP} of 1-GPU nodes that take "
           f"{BOOT_SECONDS:g} s to boot")  # fmt: skip
    info = sdk.FrameworkInfo(name="trainer", capabilities=[GPU])
    async with AutoscalerRun(cluster.master, _config) as autoscaler:
        watch = _Watch(autoscaler)
        if with_fix:
            fig = await _with_gang(cluster, tl, watch, info)
        else:
            fig = await _without_gang(cluster, tl, watch, info, cycles)
        await watch.poll()
    ev = watch.events
    ups = [e for e in ev if e["reason"] == "TriggeredScaleUp"]
    nodes = [int(m.group(2)) for e in ups if (m := _UP.match(e["message"]))]
    return {
        "workers_wanted": WORKERS,
        "gpus_missing": WORKERS - sum(STATIC_GPUS),
        "scale_ups": len(ups),
        "nodes_added": sum(nodes),
        "scale_downs": _count(ev, "ScaleDown"),
        "oscillations": oscillations(ev),
        **fig,
    }


async def _without_gang(
    cluster: LocalCluster, tl: Timeline, watch: _Watch, info: sdk.FrameworkInfo, cycles: int
) -> Figures:
    trainer = Patient()
    idle_nodes = 0.0
    async with sdk.Driver(trainer, info, cluster.master) as driver:
        for cycle in range(cycles):
            ups, downs = _count(watch.events, "TriggeredScaleUp"), _count(watch.events, "ScaleDown")
            trainer.accepting = True
            await driver.set_demands([trainer.demand()])
            tl.say(f"trainer wants {WORKERS} workers of 1 GPU, takes GPUs as offered"
                   + (" (its retry)" if cycle else ""))  # fmt: skip
            await must(lambda: trainer.members.running >= WORKERS - 1, 60, "7 workers")
            tl.say(f"{trainer.members.running}/{WORKERS} workers hold GPUs, idle: the 8th is "
                   "pending")  # fmt: skip
            await watch.until("TriggeredScaleUp", ups, 60, "the autoscaler to scale up")
            up = [e for e in watch.events if e["reason"] == "TriggeredScaleUp"][-1]
            tl.say(f"TriggeredScaleUp: {up['message']}")
            # The trainer's patience, a clock of the story (as partial-gang's busy GPU): it
            # runs out while the node boots (BOOT_SECONDS after the scale-up, at the least).
            await asyncio.sleep(PATIENCE)
            trainer.accepting = False
            await driver.set_demands([])
            for task_id in sorted(trainer.launched - trainer.members.ended):
                await driver.kill(task_id)
            await must(lambda: trainer.live == 0, 60, "the trainer's workers to end")
            tl.say(f"after {PATIENCE:g} s more without its 8th the trainer gives up: releases "
                   "its GPUs, retries after a backoff")  # fmt: skip
            await watch.until("ScaleDown", downs, 90, "the idle node to be scaled down")
            down = [e for e in watch.events if e["reason"] == "ScaleDown"][-1]
            tl.say(f"ScaleDown: {down['message']} (it came up idle)")
            name = down["message"].split()[1]
            if name in watch.registered:
                idle_nodes += max(0.0, float(down["at"]) - watch.registered[name])
        await driver.teardown()
    held = sum(s[-1] - s[0] for s in trainer.spans.values() if len(s) == 2)
    idle = held + idle_nodes  # 1 GPU per worker and per node
    tl.say(f"{cycles} rounds, the gang never ran; {idle:.1f} GPU-seconds held or added idle")
    return {"idle_gpu_seconds": round(idle, 1), "seconds_to_running_gang": None}


async def _with_gang(
    cluster: LocalCluster, tl: Timeline, watch: _Watch, info: sdk.FrameworkInfo
) -> Figures:
    trainer = Gang("worker", WORKERS, cpus=1, mem=256, gpus=1)
    async with sdk.Driver(trainer, info, cluster.master) as driver:
        asked = time.time()
        await driver.set_demands([trainer.demand(min_member=WORKERS)])
        tl.say(f"trainer wants {WORKERS} workers of 1 GPU as a gang (min_member {WORKERS})")
        await watch.until("TriggeredScaleUp", 0, 60, "the autoscaler to scale up")
        up = [e for e in watch.events if e["reason"] == "TriggeredScaleUp"][-1]
        tl.say(f"TriggeredScaleUp: {up['message']}; no GPU held while it boots")
        await must(lambda: trainer.members.running == WORKERS, 90, "the gang to run")
        ran = time.time()
        tl.say(f"{WORKERS}/{WORKERS} workers running {ran - asked:.1f} s after the demand")
        # Nothing to wait for but time: the window in which the idle node went without the
        # fix (the delay after the scale-up and the unneeded time, and a few scans).
        await asyncio.sleep(DELAY_AFTER_ADD + UNNEEDED + 5 * SCAN)
        await watch.poll()
        downs = _count(watch.events, "ScaleDown")
        tl.say(f"{downs} scale-downs while the gang runs (a node holding a gang member stays)")
        idle = sum(max(0.0, ran - t) for t in watch.registered.values())
        await driver.teardown()
    return {"idle_gpu_seconds": round(idle, 1), "seconds_to_running_gang": round(ran - asked, 1)}


SCENARIO = Scenario(
    name="autoscaler-oscillation",
    summary="a gang of 8 without a bundle places 7; the autoscaler adds a node, removes it, adds "
    "it again",
    symptom="the autoscaler adds a GPU node, scales it down, adds it again; the trainer's 8 "
    "workers never run together and GPUs sit idle",
    cause="the trainer takes GPUs one by one: 7 start and wait for the 8th, the autoscaler sees "
    "one pending task and adds a node; the node boots after the trainer's patience, the trainer "
    "lets go, the new node is idle and goes, and the retry starts it all over",
    fix="a gang demand (min_member = 8): nothing is placed until all fit, the master's what-if "
    "asks for exactly the node the gang misses, and a node holding a gang member is never "
    "scaled down: one scale-up, 0 oscillations",
    agents=_agents,
    run=_run,
)
