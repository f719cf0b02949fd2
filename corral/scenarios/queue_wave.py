"""queue-wave: team A's training wave fills the GPUs and team B's batch waits behind it; with
the job service's queues (nominal quotas in one cohort, reclaim), B's jobs start within seconds
and A keeps borrowing what B does not use.

The job service runs in the scenario's process (``JobService`` over its records in the work
dir, each job its own framework on the public SDK), against a real master and simulated GPU
agents, as the other scenarios run their frameworks.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from dataclasses import dataclass
from typing import Any

from corral.frameworks.jobs.queues import QueueConfig
from corral.frameworks.jobs.service import JobService
from corral.frameworks.jobs.store import JobStore
from corral.frameworks.sdk.testing import LocalCluster
from corral.frameworks.service.http_api import Caller
from corral.frameworks.service.records import Records
from corral.frameworks.service.sqlite_records import SqliteRecords
from corral.scenarios.base import Figures, Scenario, Timeline, must

SCENARIO_CALLER = Caller("scenario", frozenset({"operator"}), False)
SAMPLE_SECONDS = 0.2


@dataclass(frozen=True)
class Size:
    agents: int  # of 2 GPUs each
    a_jobs: int  # team A's training jobs, 2 GPUs each
    a_seconds: float  # how long each of A's tasks trains
    b_jobs: int  # team B's jobs, 1 GPU each
    b_seconds: float


SIZES = {"small": Size(4, 8, 10.0, 2, 3.0), "full": Size(4, 12, 30.0, 2, 5.0)}


def _agents(size: str) -> list[tuple[str, str, dict[str, str]]]:
    n = SIZES[size].agents
    return [(f"gpu-{i}", "cpus:8;mem:16384;disk:1000;gpus:2", {}) for i in range(n)]


def _queues(with_fix: bool, gpus: int) -> dict[str, Any]:
    if not with_fix:
        # One queue for everyone that counts nothing: every job is admitted at once and the
        # teams' frameworks meet at the master, first come first served.
        return {"cluster_queues": [{"name": "shared", "resources": {"default": {}}}]}
    half = gpus // 2

    def team(name: str) -> dict[str, Any]:
        return {
            "name": name,
            "cohort": "gpus",
            "preemption": {"reclaim_within_cohort": "Any"},
            "resources": {"default": {"gpus": half}},
        }

    return {"cluster_queues": [team("team-a"), team("team-b")]}


def _job(name: str, queue: str, tasks: int, seconds: float) -> dict[str, Any]:
    return {
        "name": name,
        "queue": queue,
        "priority_class": "batch",
        "stages": [
            {"name": "work", "tasks": tasks, "cpus": 1, "mem": 256, "gpus": 1, "duration": seconds}
        ],
    }


async def _run(cluster: LocalCluster, tl: Timeline, with_fix: bool, size: str) -> Figures:
    s = SIZES[size]
    gpus = s.agents * 2
    state = cluster.work_dir / ("jobs-with-fix" if with_fix else "jobs-without-fix")
    state.mkdir(parents=True, exist_ok=True)
    records = Records(SqliteRecords(state / "jobs.db"))
    service = JobService(
        JobStore(records),
        QueueConfig.from_json(_queues(with_fix, gpus)),
        cluster.master,
        state_dir=state,
    )
    await service.start()
    a_queue, b_queue = ("team-a", "team-b") if with_fix else ("shared", "shared")
    a_names = [f"train-{i}" for i in range(s.a_jobs)]
    b_names = [f"batch-b{i}" for i in range(s.b_jobs)]
    held: list[tuple[float, int]] = []  # (time, GPUs held by A's tasks)
    b_submitted: dict[str, float] = {}
    b_started: dict[str, float] = {}

    def a_gpus() -> int:
        return sum(len(r.live_tasks()) for n, r in service.runners.items() if n in a_names)

    async def sample() -> None:
        while True:
            now = time.monotonic()
            held.append((now, a_gpus()))
            for name in b_names:
                r = service.runners.get(name)
                if name in b_submitted and name not in b_started and r and r.launched.is_set():
                    b_started[name] = now
            await asyncio.sleep(SAMPLE_SECONDS)

    sampler = asyncio.ensure_future(sample())
    try:
        how = (
            f"queues team-a and team-b, {gpus // 2} GPUs nominal each, one cohort, reclaim"
            if with_fix
            else "one shared queue, no quotas"
        )
        tl.say(f"{gpus} GPUs; {how}")
        for name in a_names:
            await service.submit(_job(name, a_queue, 2, s.a_seconds), SCENARIO_CALLER)
        tl.say(f"team A submits {s.a_jobs} training jobs of 2 GPUs ({s.a_seconds:g} s each)")
        await must(lambda: a_gpus() >= gpus, 60, "team A's wave to fill the GPUs")
        wave_full = time.monotonic()
        tl.say(f"team A holds all {gpus} GPUs")
        for name in b_names:
            b_submitted[name] = time.monotonic()
            await service.submit(_job(name, b_queue, 1, s.b_seconds), SCENARIO_CALLER)
        tl.say(f"team B submits {s.b_jobs} jobs of 1 GPU ({s.b_seconds:g} s each)")
        await must(
            lambda: len(b_started) == s.b_jobs,
            s.a_seconds * 3 + 30,
            "team B's jobs to start",
        )
        waits = [b_started[n] - b_submitted[n] for n in b_names]
        tl.say(f"team B's jobs started after {', '.join(f'{w:.1f} s' for w in waits)}")
        # A's use over one training length from the moment its wave filled the GPUs.
        window_end = wave_full + s.a_seconds
        await asyncio.sleep(max(0.0, window_end - time.monotonic()))
        b_running = max(b_started.values())
        while_b = [g for t, g in held if b_running <= t < b_running + s.b_seconds]
        a_gpu_seconds = _integral(held, wave_full, window_end)
        preempted = sum(
            1 for n in a_names if any(h["kind"] == "Evicting" for h in service.store.history(n))
        )
        tl.say(
            f"team A used {a_gpu_seconds:.0f} GPU-seconds in its first {s.a_seconds:g} s; "
            f"{preempted} of its jobs preempted and requeued; it held {min(while_b, default=0)}"
            f"-{max(while_b, default=0)} GPUs while B ran"
        )
        return {
            "team_b_wait_seconds": round(max(waits), 1),
            "team_a_gpu_seconds": round(a_gpu_seconds, 1),
            "team_a_gpus_while_b_runs": min(while_b, default=0),
            "team_a_jobs_preempted": preempted,
            "gpus": gpus,
        }
    finally:
        sampler.cancel()
        await service.close()  # the jobs' frameworks end with the cluster
        records.close()


def _integral(samples: list[tuple[float, int]], start: float, end: float) -> float:
    """GPU-seconds: the step function ``samples`` integrated over [start, end]."""
    total = 0.0
    for (t0, g), (t1, _) in itertools.pairwise(samples):
        lo, hi = max(t0, start), min(t1, end)
        if hi > lo:
            total += g * (hi - lo)
    return total


SCENARIO = Scenario(
    name="queue-wave",
    summary="a training wave takes every GPU and another team's batch waits; queues with "
    "nominal quotas and reclaim start it within seconds",
    symptom="team B's jobs wait as long as team A's training jobs run: A's wave holds every "
    "GPU, though half of them are B's share",
    cause="jobs go straight to the master first come first served: nothing says which GPUs "
    "are whose, so A's earlier jobs take them all and B waits for them to end",
    fix="the job service's queues (docs/jobs.md): team-a and team-b each 4 GPUs nominal in one "
    "cohort; A borrows B's idle GPUs, and when B's jobs come B reclaims its quota by "
    "preempting whole borrowing jobs of A (requeued, no retry spent); A keeps borrowing what "
    "B does not use",
    agents=_agents,
    run=_run,
)
