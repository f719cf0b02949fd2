"""What agents that come and go leave behind: `corral get agents` and a restart after N of them.

    python scripts/unreachable_agents.py [--agents 5000] [-- MASTER_FLAGS...]

Starts a real `corral master` with a work dir (its registry on disk) and a short agent
timeout, registers ``--agents`` agents on raw AgentService.Connect streams (no agent
processes: each is one stream, as tests/integration/test_hostile_peers.py drives them), then
closes every stream, so each agent becomes UNREACHABLE after the timeout. Once none is active
it prints: the agent records the master keeps (GetState) and the registry holds (SQLite), the
wall time of `corral get agents` (best and worst of three), and the time a restarted master
takes from its start to serving (the ready file), reading that registry.

Flags after ``--`` go to the master, e.g. ``-- --registry-max-agent-count 100000`` to keep
every record as a master before issue #30 did. The measurement behind docs/operations.md,
"Nothing kept forever".
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from corral.frameworks.sdk import tls as sdk_tls
from corral.v1 import agent_pb2, agent_pb2_grpc
from corral.v1 import common_pb2 as pb
from corral.v1 import operator_pb2 as op
from corral.v1 import operator_pb2_grpc as op_grpc

CORRAL = (sys.executable, "-m", "corral.cli.main")
STREAMS_PER_CHANNEL = 500  # gRPC's default concurrent-stream limit per connection is 100+


Master = tuple[subprocess.Popen[bytes], float, dict[str, str]]


def start_master(work: Path, extra: list[str]) -> Master:
    """Start the master; return it, the seconds until it served, and its ready file."""
    ready = work / "ready.json"
    ready.unlink(missing_ok=True)
    log = (work / "master.log").open("ab")
    started = time.perf_counter()
    proc = subprocess.Popen(
        [
            *CORRAL,
            "master",
            *("--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0"),
            *("--work-dir", str(work / "master"), "--ready-file", str(ready)),
            *("--agent-timeout", "2", "--agent-reregister-timeout", "2"),
            *extra,
        ],
        stdout=log,
        stderr=log,
        start_new_session=True,
    )
    deadline = started + 300
    while not ready.exists():
        if proc.poll() is not None:
            raise SystemExit(f"the master exited {proc.returncode}: see {work / 'master.log'}")
        if time.perf_counter() > deadline:
            raise SystemExit("the master did not start within 300 s")
        time.sleep(0.02)
    return proc, time.perf_counter() - started, json.loads(ready.read_text())


def stop_master(proc: subprocess.Popen[bytes]) -> None:
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


async def register_and_leave(master: str, count: int) -> None:
    """Register ``count`` agents on raw streams, then close every stream."""
    tls = sdk_tls.resolve()  # the master this script starts writes it (~/.corral/tls)
    channels = [sdk_tls.aio_channel(master, tls) for _ in range(-(-count // STREAMS_PER_CHANNEL))]
    calls = []

    async def one(i: int) -> None:
        stub = agent_pb2_grpc.AgentServiceStub(channels[i // STREAMS_PER_CHANNEL])  # type: ignore[no-untyped-call]
        call = stub.Connect()
        info = pb.AgentInfo(
            hostname=f"gone-{i}", resources=pb.Resources(cpus=4, mem=4096, disk=10000)
        )
        await call.write(agent_pb2.AgentMessage(register=agent_pb2.Register(info=info)))
        reply = await call.read()
        if not reply.HasField("registered"):
            raise SystemExit(f"agent {i} was not registered: {reply}")
        calls.append(call)

    for start in range(0, count, 1000):
        await asyncio.gather(*(one(i) for i in range(start, min(count, start + 1000))))
    for call in calls:
        call.cancel()
    for ch in channels:
        await ch.close()


async def agents_in(master: str) -> tuple[int, int]:
    """(records, active) in the master's GetState."""
    async with sdk_tls.aio_channel(
        master, sdk_tls.resolve(), [("grpc.max_receive_message_length", 64 * 1024 * 1024)]
    ) as ch:
        state = await op_grpc.OperatorStub(ch).GetState(op.GetStateRequest(), timeout=120)  # type: ignore[no-untyped-call]
    return len(state.agents), sum(a.active for a in state.agents)


async def wait_none_active(master: str, timeout: float = 300) -> int:
    deadline = time.perf_counter() + timeout
    while True:
        records, active = await agents_in(master)
        if active == 0:
            return records
        if time.perf_counter() > deadline:
            raise SystemExit(f"{active} agents still active after {timeout:g} s")
        await asyncio.sleep(0.5)


async def get_state_seconds(master: str) -> float:
    """The best of three GetState calls: the master's side of `corral get agents`."""
    times = []
    for _ in range(3):
        started = time.perf_counter()
        await agents_in(master)
        times.append(time.perf_counter() - started)
    return min(times)


def get_agents_seconds(master: str) -> tuple[float, float]:
    times = []
    for _ in range(3):
        started = time.perf_counter()
        subprocess.run(
            [*CORRAL, "get", "agents", "--master", master], check=True, capture_output=True
        )
        times.append(time.perf_counter() - started)
    return min(times), max(times)


def registry_rows(work: Path) -> int:
    db = sqlite3.connect(work / "master" / "registry.db")
    try:
        rows: int = db.execute("SELECT COUNT(*) FROM agents").fetchone()[0]
        return rows
    finally:
        db.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=5000)
    parser.add_argument("master_flags", nargs="*", help="after --: flags for the master")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="corral-gone-") as tmp:
        work = Path(tmp)
        proc, _, ready = start_master(work, args.master_flags)
        try:
            asyncio.run(register_and_leave(ready["grpc"], args.agents))
            records = asyncio.run(wait_none_active(ready["grpc"]))
            best, worst = get_agents_seconds(ready["grpc"])
            get_state = asyncio.run(get_state_seconds(ready["grpc"]))
        finally:
            stop_master(proc)
        rows = registry_rows(work)
        proc, restart, ready = start_master(work, args.master_flags)
        try:
            after = asyncio.run(agents_in(ready["grpc"]))[0]
            best_after, worst_after = get_agents_seconds(ready["grpc"])
        finally:
            stop_master(proc)
    print(f"agents registered and gone: {args.agents}")
    print(f"agent records in the master (GetState): {records}; in the registry: {rows}")
    print(f"corral get agents: {best:.2f} s best, {worst:.2f} s worst of 3")
    print(f"GetState alone (the master's side): {get_state:.2f} s best of 3")
    print(f"restart until serving: {restart:.2f} s; records after it: {after}")
    print(
        f"corral get agents after the restart: {best_after:.2f} s best, {worst_after:.2f} s worst"
    )


if __name__ == "__main__":
    main()
