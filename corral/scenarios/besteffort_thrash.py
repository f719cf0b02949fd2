"""besteffort-thrash: batch work with no requests (BestEffort) shares agents with serving;
memory pressure evicts serving instances and they flap. With honest requests (what each task
really uses) placement counts every task's memory and keeps the agent out of pressure; with a
low priority class for batch, what pressure is left takes batch tasks, never serving."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from corral.frameworks import sdk
from corral.frameworks.sdk.testing import LocalCluster
from corral.scenarios.base import Figures, Scenario, Timeline, must
from corral.scenarios.keepers import Keeper, hog
from corral.v1 import operator_pb2 as op
from corral.v1 import operator_pb2_grpc as op_grpc

# Real agents whose mem is far below the machine's: the pressure is theirs, safe to cause.
AGENT_MEM = 700
HARD = 96  # MiB available below which an agent evicts at once; it offers AGENT_MEM - HARD
SERVING_MIB = 130  # what a serving instance holds; it requests 64 without the fix
BATCH_MIB = 30  # what a batch task holds, for BATCH_SECONDS
# What each task really uses, as the agent measures it (`corral get tasks`, MEM USED): what it
# holds plus its Python interpreter's own (~13 MiB), rounded up. The fix's requests.
SERVING_USES = 150
BATCH_USES = 48


@dataclass(frozen=True)
class Size:
    agents: int
    window: float  # seconds batch and serving share the agents


SIZES = {"small": Size(1, 20.0), "full": Size(2, 60.0)}
BATCH_SECONDS = 3.0


def _agents(size: str) -> list[tuple[str, str, dict[str, str]]]:
    n = SIZES[size].agents
    return [(f"agent-{i}", f"cpus:4;mem:{AGENT_MEM};disk:1000", {}) for i in range(n)]


async def _pressure_events(cluster: LocalCluster) -> int:
    async with cluster.channel() as channel:
        stub = op_grpc.OperatorStub(channel)  # type: ignore[no-untyped-call]
        got: op.ClusterEvents = await stub.GetEvents(
            op.GetEventsRequest(reason="MemoryPressure"), timeout=5
        )
    return len(got.events)


async def _peak_used(cluster: LocalCluster, seconds: float) -> float:
    """The most memory an agent's tasks used, as it reported, over ``seconds``."""
    loop = asyncio.get_running_loop()
    end, peak = loop.time() + seconds, 0.0
    while loop.time() < end:
        state = await cluster.state()
        peak = max([peak, *(a.usage.mem_used for a in state.agents)])
        await asyncio.sleep(min(0.3, max(0.0, end - loop.time())))
    return peak


async def _run(cluster: LocalCluster, tl: Timeline, with_fix: bool, size: str) -> Figures:
    s = SIZES[size]
    batch_argv = hog(BATCH_MIB, "--seconds", f"{BATCH_SECONDS:g}")
    if with_fix:
        serving_mem = SERVING_USES
        batch = Keeper("batch", 6 * s.agents, batch_argv, cpus=0.1, mem=BATCH_USES, cls="batch")
        how = f"requests 0.1 cpus and {BATCH_USES} MiB each (what it uses), class batch (-100)"
    else:
        serving_mem = 64
        batch = Keeper("batch", 6 * s.agents, batch_argv, cls="default")
        how = "no requests (BestEffort), class default"
    serving = Keeper(
        "web", 3 * s.agents, hog(SERVING_MIB), cpus=0.5, mem=serving_mem, cls="default"
    )
    async with sdk.Driver(serving, sdk.FrameworkInfo(name="web"), master=cluster.master):
        tl.say(
            f"serving: {serving.count} instances requesting {serving_mem:g} MiB, each using "
            f"{SERVING_MIB} and its interpreter's"
        )
        await must(lambda: len(serving.running) == serving.count, 60, "serving running")
        await asyncio.sleep(1.0)  # measured at full size before batch arrives
        tl.say(f"serving running; batch: {batch.count} tasks at a time, {how}")
        async with sdk.Driver(batch, sdk.FrameworkInfo(name="batch"), master=cluster.master):
            peak = await _peak_used(cluster, s.window)
        state = await cluster.state()
        pressures = await _pressure_events(cluster)
    evicted = sum(k.ended["EVICTED"] for k in (serving, batch))
    tl.say(
        f"after {s.window:g} s: {serving.restarts} serving restarts, {evicted} evictions, "
        f"{batch.finished} batch tasks completed, {pressures} times under memory pressure"
    )
    pressured = sum(1 for a in state.agents if a.usage.memory_pressure)
    return {
        "serving_restarts": serving.restarts,
        "serving_evicted": serving.ended["EVICTED"],
        "evictions": evicted,
        "batch_evicted": batch.ended["EVICTED"],
        "batch_completed": batch.finished,
        "batch_most_at_once": batch.most_running,
        "times_under_pressure": pressures,
        # Above AGENT_MEM - HARD is pressure.
        "peak_mem_used": round(peak),
        "agents_under_pressure_at_end": pressured,
    }


SCENARIO = Scenario(
    name="besteffort-thrash",
    summary="BestEffort batch beside serving: pressure evicts serving unless batch ranks lower",
    symptom="serving instances are evicted and restarted again and again while batch runs "
    "beside them",
    cause="batch asks for nothing (BestEffort), so the allocator counts none of its memory and "
    "packs it beside serving; under memory pressure an agent evicts, among equal priorities, "
    "whoever uses the most over its request (kubelet's order), and serving instances using more "
    "than they request are that",
    fix="honest requests (what each task really uses: placement then counts batch's memory, "
    "and an agent offers its mem less the hard eviction threshold, so the agent stays out of "
    "pressure) and the low priority class batch (-100), so that what pressure is left evicts "
    "batch tasks, never serving",
    agents=_agents,
    run=_run,
    agent_args=(
        *("--usage-interval", "0.3", "--eviction-hard", f"memory.available<{HARD}"),
        *("--eviction-pressure-transition", "1", "--kill-grace-period", "1"),
    ),
)
