"""Launches through the Mesos API (unmodified pymesos) vs through gRPC (the SDK), on one real
cluster of simulated agents: the Mesos API's own cost (issue #46, docs/performance.md).

    .venv/bin/python scripts/mesos_api_bench.py [--tasks 1000] [--agents 20] [--pairs 2]

Each run launches ``--tasks`` tasks (0.1 cpus, 32 MiB; simulated agents end each at once,
exit 0) and waits until every one is FINISHED and acknowledged. Printed per run: tasks per
second (first offer to last FINISHED, wall clock) and the master's CPU per task (its process's
user + system time over the run). pymesos makes one HTTP request per call (an ACCEPT per offer,
an ACKNOWLEDGE per status update); the SDK batches calls on one gRPC stream. Runs alternate
(Mesos, gRPC, Mesos, gRPC, ...) on the same master, so the machine's slow phases fall on both.
Run `corral bench launches` beside it: the gauge of this machine's speed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

import psutil

from corral.frameworks import sdk
from corral.frameworks.sdk.testing import LocalCluster

PROGRAM = Path(__file__).resolve().parents[1] / "tests" / "integration" / "mesos_framework.py"
CREDENTIALS = {"credentials": [{"principal": "bench", "secret": "bench-secret"}]}


def master_cpu(cluster: LocalCluster) -> float:
    times = psutil.Process(cluster.processes["master"].pid).cpu_times()
    return float(times.user + times.system)


async def mesos_run(cluster: LocalCluster, tasks: int, name: str) -> tuple[float, float]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(PROGRAM),
        *("--master", cluster.ready["mesos"], "--name", name, "--tasks", str(tasks)),
        *("--principal", "bench", "--secret", "bench-secret", "--command", "true"),
        *("--refuse", "0"),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    assert proc.stdout is not None and proc.stdin is not None
    start = cpu0 = 0.0
    finished = 0
    async for raw in proc.stdout:
        line = json.loads(raw)
        if line["event"] == "registered":
            start, cpu0 = time.perf_counter(), master_cpu(cluster)
        elif line["event"] == "update" and line["state"] == "TASK_FINISHED":
            finished += 1
            if finished == tasks:
                break
    wall, cpu = time.perf_counter() - start, master_cpu(cluster) - cpu0
    proc.stdin.write(b"stop\n")
    await proc.stdin.drain()
    await asyncio.wait_for(proc.wait(), 60)
    return tasks / wall, cpu / tasks * 1e6


class Launcher(sdk.Scheduler):
    def __init__(self, tasks: int, name: str) -> None:
        self.pending = [sdk.task(f"{name}-{n}", "true", cpus=0.1, mem=32) for n in range(tasks)]
        self.left = tasks
        self.done = asyncio.Event()

    async def offers(self, driver: sdk.Driver, offers: list[sdk.Offer]) -> None:
        for offer in offers:
            packer = sdk.OfferPacker(offer)
            self.pending = packer.add_all(self.pending)
            try:
                await driver.launch([offer], packer.tasks, refuse_seconds=0)
            except sdk.CallError:
                self.pending += packer.tasks

    async def status(self, driver: sdk.Driver, status: sdk.TaskStatus) -> None:
        if sdk.state_name(status.state) == "FINISHED":
            self.left -= 1
            if self.left == 0:
                self.done.set()


async def grpc_run(cluster: LocalCluster, tasks: int, name: str) -> tuple[float, float]:
    launcher = Launcher(tasks, name)
    start, cpu0 = time.perf_counter(), master_cpu(cluster)
    async with sdk.Driver(launcher, sdk.FrameworkInfo(name=name), cluster.master) as driver:
        await asyncio.wait_for(launcher.done.wait(), 600)
        wall, cpu = time.perf_counter() - start, master_cpu(cluster) - cpu0
        await driver.stop()
    return tasks / wall, cpu / tasks * 1e6


async def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", type=int, default=1000)
    p.add_argument("--agents", type=int, default=20)
    p.add_argument("--pairs", type=int, default=2)
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="corral-mesos-bench-") as tmp:
        creds = Path(tmp) / "credentials.json"
        creds.write_text(json.dumps(CREDENTIALS))
        async with LocalCluster(
            agents=1,
            agent_args=("--simulate", "--count", str(args.agents)),
            master_args=(
                *("--mesos-api", "127.0.0.1:0", "--mesos-credentials", str(creds)),
                "--mesos-api-plaintext",
            ),
        ) as cluster:
            await cluster.wait_for_agents(args.agents, 60)
            for pair in range(args.pairs):
                for kind, run in (("mesos", mesos_run), ("grpc", grpc_run)):
                    rate, cpu = await run(cluster, args.tasks, f"{kind}-{pair}")
                    print(
                        f"{kind:5} pair {pair}: {rate:7.1f} tasks/s, "
                        f"master CPU {cpu:6.0f} µs per task",
                        flush=True,
                    )
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
