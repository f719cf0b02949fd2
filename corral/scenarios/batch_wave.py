"""batch-wave: a batch wave takes the cluster; serving instances wait behind it unless serving
outranks batch (priority classes) and preempts it."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from corral.frameworks.batch import run as batch_run
from corral.frameworks.batch.job import JobSpec, Stage
from corral.frameworks.batch.scheduler import BatchScheduler
from corral.frameworks.sdk.testing import LocalCluster
from corral.scenarios.base import Figures, Scenario, Timeline, must, until
from corral.scenarios.workloads import LONG, ServingRun


@dataclass(frozen=True)
class Size:
    agents: int
    cpus: int  # per agent
    batch_tasks: int
    serving: int  # instances of 2 cpus
    window: float  # seconds serving is given to become whole


SIZES = {"small": Size(2, 8, 32, 3, 3.0), "full": Size(4, 8, 96, 6, 10.0)}


def _agents(size: str) -> list[tuple[str, str, dict[str, str]]]:
    s = SIZES[size]
    return [(f"agent-{i}", f"cpus:{s.cpus};mem:16384;disk:1000", {}) for i in range(s.agents)]


async def _run(cluster: LocalCluster, tl: Timeline, with_fix: bool, size: str) -> Figures:
    s = SIZES[size]
    cpus = s.agents * s.cpus
    batch_class, serving_class = ("batch", "serving") if with_fix else ("default", "default")
    spec = JobSpec(
        "wave",
        (Stage("map", s.batch_tasks, cpus=1, mem=64, duration=LONG),),
        priority_class=batch_class,
    )
    batch = BatchScheduler(spec)
    job = asyncio.ensure_future(batch_run.run_job(spec, cluster.master, scheduler=batch))
    try:
        tl.say(f"batch wave: {s.batch_tasks} tasks of 1 cpu, class {batch_class}, {cpus} cpus")
        await must(lambda: len(batch.job.live) >= cpus, 60, "the batch wave to fill the cluster")
        tl.say(f"batch holds all {cpus} cpus; {s.batch_tasks - cpus} tasks queued behind them")
        app: dict[str, object] = {
            "id": "web",
            "command": f"sleep {LONG:g}",
            "instances": s.serving,
            "cpus": 2,
            "mem": 256,
            "priority_class": serving_class,
            "simulate_seconds": LONG,
        }
        serving = ServingRun(app, cluster.master)
        try:
            began = time.monotonic()
            tl.say(f"serving app web: {s.serving} instances of 2 cpus, class {serving_class}")
            full = await until(lambda: serving.running >= s.serving, s.window, "serving whole")
            took = time.monotonic() - began if full else None
            running = serving.running
            if full:
                tl.say(f"serving {running}/{s.serving} running in {took:.1f} s")
            else:
                tl.say(f"after {s.window:g} s serving is {running}/{s.serving}: pending")
            preempted = batch.job.counts()["disruptions"]  # here, preemptions only
            if preempted:
                tl.say(f"{preempted} batch tasks preempted, requeued by the batch framework")
        finally:
            await serving.close()
    finally:
        job.cancel()
        await asyncio.gather(job, return_exceptions=True)
    return {
        "serving_wanted": s.serving,
        "serving_running": running,
        "serving_pending": s.serving - running,
        "seconds_to_full": None if took is None else round(took, 2),
        "batch_preempted": preempted,
    }


SCENARIO = Scenario(
    name="batch-wave",
    summary="a batch wave takes the cluster; serving waits unless it outranks batch",
    symptom="serving instances stay pending while a batch wave holds every cpu",
    cause="every framework is in one priority class, so DRF shares out the cluster in turn: "
    "serving gets cpus only as batch tasks end, and a wave's tasks can run for hours",
    fix="priority classes: serving (1000) above batch (-100, preemption Never). The master "
    "preempts batch tasks for serving's unmet demand; the batch framework requeues them",
    agents=_agents,
    run=_run,
)
