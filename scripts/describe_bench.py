"""What one `corral describe` costs the master at N agents (issue #48): the whole GetState it
used to ask for against the scoped GetState it asks for now (master/state_scope.py).

A real master (master/bench/synthetic_master.py gives it N agents by registration events, no
agent processes, no tasks), then over real gRPC: GetState whole, and scoped to an agent by id,
to an agent by hostname (a pass over the agents' names), and to a role (a pass over the
agents, as GetRoles); each the median wall time of ``--rounds`` calls and its message size.
Then the real `corral describe agent ID` command, wall time to its exit. A build before the
scopes (on PYTHONPATH, run from outside the checkout) measures the whole state and its
describe only.

    .venv/bin/python scripts/describe_bench.py --agents 50000 --rounds 5
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time

import grpc

from corral.limits import MAX_MESSAGE_BYTES
from corral.logging import configure
from corral.master.bench.synthetic_master import agent_id, master_with_agents
from corral.v1 import operator_pb2 as op
from corral.v1 import operator_pb2_grpc

CORRAL = [sys.executable, "-c", "import sys; from corral.cli.main import main; sys.exit(main())"]


async def main(agents: int, rounds: int) -> None:
    configure("warning")  # not a line per agent added
    master = await master_with_agents(agents)
    try:
        target = master.grpc_address
        async with grpc.aio.insecure_channel(
            target, options=[("grpc.max_receive_message_length", MAX_MESSAGE_BYTES)]
        ) as channel:
            stub = operator_pb2_grpc.OperatorStub(channel)  # type: ignore[no-untyped-call]
            some = agent_id(agents // 2)
            cases = {"whole state": op.GetStateRequest()}
            if "agent" in op.GetStateRequest.DESCRIPTOR.fields_by_name:  # not a build before
                cases |= {
                    "agent by id": op.GetStateRequest(agent=some),
                    "agent by hostname": op.GetStateRequest(agent=f"host-{agents // 2:05d}"),
                    "role": op.GetStateRequest(role="*"),
                }
            print(f"{agents} agents; median of {rounds} calls (wall, over gRPC)")
            for name, request in cases.items():
                times, size = [], 0
                for _ in range(rounds):
                    started = time.perf_counter()
                    state = await stub.GetState(request, timeout=300)
                    times.append(time.perf_counter() - started)
                    size = state.ByteSize()
                print(f"  {name:<18} {1000 * statistics.median(times):9.1f} ms  {size:>10,} bytes")
        home = tempfile.mkdtemp(prefix="describe-bench-")  # not the user's contexts
        started = time.perf_counter()
        done = await asyncio.to_thread(
            subprocess.run,
            [*CORRAL, "describe", "agent", some, "--insecure", "--master", target],
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "CORRAL_HOME": home},
            check=False,
        )
        took = time.perf_counter() - started
        print(f"  `corral describe agent` {took:6.2f} s to exit {done.returncode}")
        if done.returncode:
            print(done.stderr, file=sys.stderr)
    finally:
        await master.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", type=int, default=50000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(main(args.agents, args.rounds))
