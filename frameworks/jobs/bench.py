"""``corral bench jobs``: the job service's admission cycle with many queued jobs (docs/
performance.md). Pure: the model only, no master, no store; the clock is passed in.

The shape: ``queues`` cluster queues in cohorts of 5, each with a nominal quota of 64 cpus,
256 GiB and 8 GPUs of flavor ``default`` (and every other queue 8 GPUs of flavor ``a100``
too), half StrictFIFO, half BestEffortFIFO; ``jobs`` jobs spread over them, three in four
small batch jobs (1-8 cpus, 1-16 GiB) and one in four gangs (4-32 GPUs), in three priority
classes. Phases, each timed per cycle:

- ``cold``: the first cycle, every job pending (most admissions happen here);
- ``steady``: nothing changed since the last cycle (every pending job is looked at again);
- ``churn``: 5 % of the admitted jobs end before the cycle (what a busy service sees);
- ``lend``: a queue's jobs all end (cancelled): its cohort borrows its quota;
- ``reclaim``: that queue gets a job of its whole nominal quota: victims are chosen among the
  borrowers (whole jobs, the lowest priority first).
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from corral.frameworks.jobs.admission import Admission, State
from corral.frameworks.jobs.queues import QueueConfig


@dataclass
class Phase:
    name: str
    ms: list[float] = field(default_factory=list)
    admitted: int = 0
    preempted: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "cycles": len(self.ms),
            "median_ms": round(statistics.median(self.ms), 3),
            "max_ms": round(max(self.ms), 3),
            "admitted": self.admitted,
            "preempted": self.preempted,
        }


def config(queues: int) -> QueueConfig:
    cqs = []
    for i in range(queues):
        resources: dict[str, Any] = {"default": {"cpus": 64, "mem": 262144, "gpus": 8}}
        if i % 2 == 0:
            resources["a100"] = {"gpus": 8}
        cqs.append(
            {
                "name": f"q{i:02d}",
                "cohort": f"c{i // 5}",
                "queueing_strategy": "StrictFIFO" if i % 2 else "BestEffortFIFO",
                "resources": resources,
            }
        )
    return QueueConfig.from_json(
        {
            "flavors": [{"name": "default"}, {"name": "a100", "attributes": {"gpu-sku": "a100"}}],
            "cluster_queues": cqs,
        }
    )


def submit_all(model: Admission, jobs: int, queues: int, seed: int) -> None:
    rng = random.Random(seed)
    for j in range(jobs):
        q = f"q{rng.randrange(queues):02d}"
        if rng.random() < 0.75:
            request = (float(rng.randint(1, 8)), float(rng.randint(1, 16) * 1024), 0.0, 0.0)
        else:
            workers = rng.choice((4, 8, 16, 32))
            request = (float(workers), float(workers * 4096), 0.0, float(workers))
        priority = rng.choice((-100, 0, 1000))
        model.submit(f"job-{j}", q, request, priority, float(j))


def run(
    jobs: int = 10_000,
    queues: int = 20,
    cycles: int = 5,
    seed: int = 1,
    clock: Callable[[], float] | None = None,
) -> dict[str, Any]:
    import time

    timer = clock or time.perf_counter
    model = Admission(config(queues))
    submit_all(model, jobs, queues, seed)
    rng = random.Random(seed + 1)
    now = float(jobs)
    phases = {name: Phase(name) for name in ("cold", "steady", "churn", "lend", "reclaim")}

    def cycle(phase: Phase) -> None:
        nonlocal now
        now += 1
        t0 = timer()
        result = model.cycle(now)
        phase.ms.append((timer() - t0) * 1000)
        phase.admitted += len(result.admitted)
        phase.preempted += len(result.preempted)
        for p in result.preempted:  # their tasks end at once
            model.evicted(p.victim)

    cycle(phases["cold"])
    for _ in range(cycles):
        cycle(phases["steady"])
    for _ in range(cycles):
        admitted = [w.name for w in model.workloads.values() if w.state is State.ADMITTED]
        for name in rng.sample(admitted, max(1, len(admitted) // 20)):
            model.finish(name)
        cycle(phases["churn"])
    for i in range(cycles):
        lender = f"q{(i * 5) % queues:02d}"  # a queue of cohort i (round the cohorts)
        for w in list(model.workloads.values()):
            if w.cluster_queue == lender:
                model.finish(w.name)
        cycle(phases["lend"])
        model.submit(f"reclaim-{i}", lender, (64.0, 65536.0, 0.0, 8.0), 1000, now)
        cycle(phases["reclaim"])
    model.validate()
    pending = sum(len(q) for q in model.pending.values())
    return {
        "jobs": jobs,
        "queues": queues,
        "pending_at_end": pending,
        "admitted_at_end": sum(1 for w in model.workloads.values() if w.state is not State.PENDING),
        **{name: p.as_dict() for name, p in phases.items()},
    }
