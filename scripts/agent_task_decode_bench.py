"""An agent's cost to decode one task the master sent it (``agent/convert.task_from_pb``): the
load test's task (a shell command, cpus 1, mem 128, simulated), best of ``--rounds`` runs of
``--count`` decodes, in µs of process time. Put another build's tree on PYTHONPATH and run
from outside the checkout to compare (docs/performance.md, "Running another build's code").

    .venv/bin/python scripts/agent_task_decode_bench.py
"""

from __future__ import annotations

import argparse
import time

import corral
from corral.agent.convert import task_from_pb
from corral.v1 import common_pb2 as pb


def main(count: int, rounds: int) -> None:
    task = pb.TaskInfo(
        task_id="task-1",
        name="load",
        agent_id="agent-1",
        framework_id="F1",
        command=pb.CommandInfo(value="true", shell=True),
        resources=pb.Resources(cpus=1, mem=128),
        simulation=pb.SimulationInfo(duration_seconds=1.0),
    )
    best = float("inf")
    for _ in range(rounds):
        started = time.process_time()
        for _ in range(count):
            task_from_pb(task, "F1")
        best = min(best, (time.process_time() - started) / count)
    print(f"{corral.__path__[0]}: {best * 1e6:.2f} µs per task decoded")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    main(args.count, args.rounds)
