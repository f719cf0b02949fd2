"""The agent core's CPU per task, without the shell or the network: for ``--tasks`` tasks at
once, a launch (in LAUNCH_TASKS of 24, as the load test sends them), the process started, the
process exited (code 0), and an acknowledgement of each of its three statuses (STARTING,
RUNNING, FINISHED, oldest first, in batches of 24); each step timed with process time and
reported per task, the median over ``--rounds`` rounds.

It runs on this tree and on the trees from before tasks were keyed by framework (``b582cdd``):
put a build's tree on PYTHONPATH and run from outside the checkout (docs/performance.md,
"Running another build's code"); run two builds at once, one per core (``taskset -c 0`` and
``-c 1``), to compare them at one machine speed.

    .venv/bin/python scripts/agent_core_bench.py
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time
from typing import Any

import corral
from corral.agent.core import AgentCore, AgentCoreConfig
from corral.agent.core import events as e
from corral.agent.core.types import CommandSpec, TaskSpec

STEPS = ("launch", "start", "exit", "ack")
BATCH = 24


def run(tasks: int, rounds: int, warmup: int = 5) -> dict[str, float]:
    uuids = iter(range(1, 1 << 62))
    core = AgentCore(lambda: next(uuids).to_bytes(16, "big"), agent_id="", config=AgentCoreConfig())
    core.handle(e.StreamOpened(now=0.0))
    core.handle(e.Registered(now=0.0, agent_id="a1", heartbeat_interval=5.0))
    # Tasks keyed by framework and id (now) or by id alone (before): the events differ.
    keyed = "framework_id" in {f.name for f in dataclasses.fields(e.ProcessStarted)}
    of_framework: dict[str, Any] = {"framework_id": "f1"} if keyed else {}

    def pending() -> list[Any]:
        if keyed:
            return [
                (s.framework_id, s.task_id, s.uuid)
                for key in core.task_keys()
                for s in core.updates.pending(*key)
            ]
        return [(s.task_id, s.uuid) for t in core.task_ids() for s in core.updates.pending(t)]

    per_step: dict[str, list[float]] = {step: [] for step in STEPS}
    command = CommandSpec(value="true", shell=True)
    made = 0
    for r in range(warmup + rounds):
        ids = [f"task-{made + i}" for i in range(tasks)]
        made += tasks
        specs = [TaskSpec(task_id=t, framework_id="f1", command=command) for t in ids]
        launches = [
            e.LaunchTasks(now=1.0, framework_id="f1", tasks=tuple(specs[i : i + BATCH]))
            for i in range(0, tasks, BATCH)
        ]
        started = [e.ProcessStarted(now=1.0, task_id=t, pid=1, **of_framework) for t in ids]
        exited = [e.ProcessExited(now=2.0, task_id=t, exit_code=0, **of_framework) for t in ids]
        t0 = time.process_time()
        core.handle_many(launches)
        t1 = time.process_time()
        core.handle_many(started)
        t2 = time.process_time()
        core.handle_many(exited)
        t3 = time.process_time()
        acks = pending()
        if len(acks) != 3 * tasks:
            raise RuntimeError(f"{len(acks)} statuses pending for {tasks} tasks, not three each")
        batches = [
            e.Acknowledged(now=2.0, acknowledgements=tuple(acks[i : i + BATCH]))
            for i in range(0, len(acks), BATCH)
        ]
        t4 = time.process_time()
        core.handle_many(batches)
        t5 = time.process_time()
        if pending() or core.live_tasks():
            raise RuntimeError("tasks left after every status was acknowledged")
        if r >= warmup:
            for step, dt in zip(STEPS, (t1 - t0, t2 - t1, t3 - t2, t5 - t4), strict=True):
                per_step[step].append(dt / tasks * 1e6)
    return {step: statistics.median(times) for step, times in per_step.items()}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=25)
    args = p.parse_args()
    if args.tasks < 1 or args.rounds < 1:
        p.error("--tasks and --rounds must be at least 1")
    costs = run(args.tasks, args.rounds)
    steps = "  ".join(f"{step} {us:.2f}" for step, us in costs.items())
    print(f"{corral.__path__[0]}: µs per task  {steps}  total {sum(costs.values()):.2f}")


if __name__ == "__main__":
    main()
