"""The master's cost to decode the tasks of one ACCEPT (``accept_tasks``, as its servicer does):
the load test's accept (24 tasks of a shell command, cpus 1, mem 128, simulated), best of
``--rounds`` runs over ``--accepts`` parsed requests, in µs of process time per task. Put another
build's tree on PYTHONPATH and run from outside the checkout to compare (docs/performance.md,
"Running another build's code"); a tree from before master/wire/ is found at its old place.

    .venv/bin/python scripts/accept_decode_bench.py
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import corral
from corral.v1 import common_pb2 as pb
from corral.v1 import scheduler_pb2

TASKS_PER_ACCEPT = 24


def _decoder() -> Callable[[Any], Any]:
    try:
        from corral.master.wire.convert import accept_tasks
    except ImportError:  # b582cdd and older: before the wire modules moved
        from corral.master.convert import accept_tasks  # type: ignore[import-not-found,no-redef]
    return accept_tasks  # type: ignore[no-any-return]


def _request(k: int) -> bytes:
    request = scheduler_pb2.AcceptRequest(
        caller=scheduler_pb2.Caller(framework_id="F1", stream_id="s"), offer_ids=[f"o-{k}"]
    )
    launch = request.operations.add().launch
    for i in range(TASKS_PER_ACCEPT):
        launch.tasks.add(
            task_id=f"task-{k}-{i}",
            name="load",
            agent_id="agent-1",
            command=pb.CommandInfo(value="true", shell=True),
            resources=pb.Resources(cpus=1.0, mem=128.0),
            simulation=pb.SimulationInfo(duration_seconds=1.0),
        )
    return request.SerializeToString()


def main(accepts: int, rounds: int) -> None:
    accept_tasks = _decoder()
    raw = [_request(k) for k in range(accepts)]
    best = float("inf")
    for _ in range(rounds):
        parsed = [scheduler_pb2.AcceptRequest.FromString(r) for r in raw]  # not timed
        started = time.process_time()
        for request in parsed:
            accept_tasks(request)
        best = min(best, (time.process_time() - started) / (accepts * TASKS_PER_ACCEPT))
    print(f"{corral.__path__[0]}: {best * 1e6:.2f} µs per task of an accept decoded")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--accepts", type=int, default=2_000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    main(args.accepts, args.rounds)
