"""The whole state at scale: each call's wall time and the master's longest stall meanwhile.

Starts master/bench/synthetic_master.py's master (a real master, plain text, given N agents by
registration events; the master's collector settings) in a child process, then calls
``GetState`` without a scope and reads ``GET /api/v1/state`` ``--calls`` times each, while a
thread asks ``GET /health`` every 10 ms: the slowest of those answers is how long the master
could not answer anything (docs/performance.md, "The whole state streamed").

    .venv/bin/python scripts/state_bench.py --agents 50000 --calls 3

Run another build's code with PYTHONPATH=<tree> (the child inherits it).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable

import grpc

from corral.v1 import operator_pb2, operator_pb2_grpc

MASTER = """
import asyncio, sys
from corral.logging import configure
from corral.gc_tuning import MASTER, tune_gc
from corral.master.bench.synthetic_master import master_with_agents
async def main():
    configure("warning")
    tune_gc(MASTER)  # as `corral master` runs
    m = await master_with_agents(int(sys.argv[1]))
    print(m.http_address, m.grpc_address, flush=True)
    await asyncio.to_thread(sys.stdin.read)  # until the bench closes it
    await m.stop()
asyncio.run(main())
"""


def stalls(http: str, call: Callable[[], int]) -> tuple[float, float, int]:
    """(wall seconds of ``call``, the slowest /health meanwhile in seconds, bytes it read)."""
    slowest: list[float] = []
    stop = threading.Event()

    def probe() -> None:
        while not stop.is_set():
            started = time.perf_counter()
            urllib.request.urlopen(f"http://{http}/health", timeout=120).read()
            slowest.append(time.perf_counter() - started)
            time.sleep(0.01)

    prober = threading.Thread(target=probe, daemon=True)
    prober.start()
    time.sleep(0.3)
    started = time.perf_counter()
    size = call()
    wall = time.perf_counter() - started
    time.sleep(0.3)
    stop.set()
    prober.join()
    return wall, max(slowest), size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", type=int, default=50_000)
    parser.add_argument("--calls", type=int, default=3)
    args = parser.parse_args()
    master = subprocess.Popen(
        [sys.executable, "-c", MASTER, str(args.agents)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=os.environ,
    )
    try:
        assert master.stdout is not None
        line = master.stdout.readline()
        if not line:
            sys.exit("the synthetic master did not start")
        http, address = line.split()
        channel = grpc.insecure_channel(
            address, options=[("grpc.max_receive_message_length", 256 * 1024 * 1024)]
        )
        stub = operator_pb2_grpc.OperatorStub(channel)  # type: ignore[no-untyped-call]

        def get_state() -> int:
            state = stub.GetState(operator_pb2.GetStateRequest(), timeout=600)
            assert len(state.agents) == args.agents
            return int(state.ByteSize())

        def state_json() -> int:
            with urllib.request.urlopen(f"http://{http}/api/v1/state", timeout=600) as r:
                return len(r.read())

        for name, call in (("GetState", get_state), ("/api/v1/state", state_json)):
            walls = []
            for i in range(args.calls):
                wall, slowest, size = stalls(http, call)
                walls.append(wall)
                print(
                    f"{name} call {i + 1}: {wall:.2f} s, {size / 1e6:.1f} MB; "
                    f"the master's longest stall {slowest * 1000:.0f} ms",
                    flush=True,
                )
            print(f"{name}: median {statistics.median(walls):.2f} s", flush=True)
        channel.close()
    finally:
        if master.stdin is not None:
            master.stdin.close()
        try:
            master.wait(60)
        except subprocess.TimeoutExpired:
            master.kill()
            master.wait()


if __name__ == "__main__":
    main()
