"""partial-gang: a trainer that takes GPUs as they come holds 7 of 8 idle while the 8th is
busy; with a gang demand nothing is held until all 8 fit, and then all 8 start together."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from corral.frameworks import sdk
from corral.frameworks.sdk.testing import LocalCluster
from corral.scenarios.base import Figures, Scenario, Timeline, must, until
from corral.scenarios.workloads import GPU, Gang, Instances, Members


@dataclass(frozen=True)
class Size:
    agents: int  # of 2 GPUs each
    hold: float  # seconds the blocker keeps its GPU while the trainer waits


SIZES = {"small": Size(4, 2.0), "full": Size(4, 6.0)}


def _agents(size: str) -> list[tuple[str, str, dict[str, str]]]:
    n = SIZES[size].agents
    return [(f"gpu-{i}", "cpus:8;mem:16384;disk:1000;gpus:2", {}) for i in range(n)]


def _idle_gpu_seconds(members: Members, until_time: float, gpus: float) -> float:
    """GPU-seconds the trainer held while it could not train: each started member's GPUs from
    its start until ``until_time`` (when the last member started, or the run's end)."""
    return sum(max(0.0, until_time - t) * gpus for t in members.started.values())


async def _run(cluster: LocalCluster, tl: Timeline, with_fix: bool, size: str) -> Figures:
    s = SIZES[size]
    workers = s.agents * 2
    info = sdk.FrameworkInfo(name="blocker", capabilities=[GPU])
    blocker = Instances("hog", 1, cpus=1, mem=64, gpus=1)
    async with sdk.Driver(blocker, info, cluster.master) as dblock:
        await dblock.set_demands([blocker.demand()])
        await must(lambda: blocker.members.running == 1, 30, "the blocker's task to run")
        tl.say(f"another job holds 1 of {workers} GPUs")
        trainer = (Gang if with_fix else Instances)("worker", workers, cpus=1, mem=256, gpus=1)
        async with sdk.Driver(
            trainer, sdk.FrameworkInfo(name="trainer", capabilities=[GPU]), cluster.master
        ) as driver:
            await driver.set_demands([trainer.demand(min_member=workers if with_fix else 0)])
            asked = time.monotonic()
            how = f"a gang demand (min_member {workers})" if with_fix else "takes GPUs as offered"
            tl.say(f"trainer wants {workers} workers of 1 GPU; {how}")
            await until(lambda: trainer.members.running >= workers - 1, s.hold, "7 workers")
            # The other job's hold is part of the story (how long the 8th GPU is busy), so
            # this is the one wait on the clock: the rest of the hold, whatever happened.
            await asyncio.sleep(max(0.0, s.hold - (time.monotonic() - asked)))
            started = trainer.members.running
            tl.say(f"{started}/{workers} workers started; training cannot begin until all are")
            freed = time.monotonic()
            await dblock.kill(next(iter(blocker.launched)))
            await dblock.teardown()
            tl.say("the other job ends: its GPU is free")
            await must(lambda: trainer.members.running == workers, 30, "all workers")
            whole = time.monotonic()
            after = whole - freed
            tl.say(f"{workers}/{workers} workers running, {after:.1f} s after the GPU freed")
            idle = _idle_gpu_seconds(trainer.members, whole, 1)
            tl.say(f"{idle:.1f} GPU-seconds held idle by the trainer")
            await driver.teardown()
    return {
        "workers_wanted": workers,
        "workers_started": started,
        "idle_gpu_seconds": round(idle, 1),
        "seconds_to_all_started": round(whole - freed, 2),
    }


SCENARIO = Scenario(
    name="partial-gang",
    summary="a trainer holds 7 of 8 GPUs idle waiting for the 8th; a gang demand holds none",
    symptom="GPUs sit allocated and idle: the trainer has 7 workers and cannot start training",
    cause="the trainer accepts GPUs as they are offered, one agent at a time, so it holds "
    "part of what it needs while the rest is busy elsewhere",
    fix="a gang demand (min_member = 8): the master offers the 8 GPUs only as one bundle, so "
    "nothing is held until all fit and then all workers start together",
    agents=_agents,
    run=_run,
)
