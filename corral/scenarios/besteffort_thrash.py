"""besteffort-thrash: batch work with no requests (BestEffort) shares agents with serving;
memory pressure evicts serving instances and they flap. With modest requests and a low priority
class the batch tasks are the ones evicted, and serving keeps running."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from corral.frameworks import sdk
from corral.frameworks.sdk.testing import LocalCluster
from corral.scenarios.base import Figures, Scenario, Timeline, must
from corral.scenarios.keepers import Keeper, hog

# Real agents whose mem is far below the machine's: the pressure is theirs, safe to cause.
AGENT_MEM = 640
HARD = 96  # MiB available below which an agent evicts at once
SERVING_MIB = 130  # what a serving instance holds; it requests 64
BATCH_MIB = 30  # what a batch task holds, for BATCH_SECONDS


@dataclass(frozen=True)
class Size:
    agents: int
    window: float  # seconds batch and serving share the agents


SIZES = {"small": Size(1, 20.0), "full": Size(2, 60.0)}
BATCH_SECONDS = 3.0


def _agents(size: str) -> list[tuple[str, str, dict[str, str]]]:
    n = SIZES[size].agents
    return [(f"agent-{i}", f"cpus:4;mem:{AGENT_MEM};disk:1000", {}) for i in range(n)]


async def _run(cluster: LocalCluster, tl: Timeline, with_fix: bool, size: str) -> Figures:
    s = SIZES[size]
    serving = Keeper("web", 3 * s.agents, hog(SERVING_MIB), cpus=0.5, mem=64, cls="default")
    if with_fix:
        batch = Keeper(
            "batch",
            6 * s.agents,
            hog(BATCH_MIB, "--seconds", f"{BATCH_SECONDS:g}"),
            cpus=0.1,
            mem=16,
            cls="batch",
        )
        how = "requests 0.1 cpus and 16 MiB each, class batch (-100)"
    else:
        batch = Keeper(
            "batch", 6 * s.agents, hog(BATCH_MIB, "--seconds", f"{BATCH_SECONDS:g}"), cls="default"
        )
        how = "no requests (BestEffort), class default"
    async with sdk.Driver(serving, sdk.FrameworkInfo(name="web"), master=cluster.master):
        tl.say(f"serving: {serving.count} instances requesting 64 MiB, each using {SERVING_MIB}")
        await must(lambda: len(serving.running) == serving.count, 60, "serving running")
        await asyncio.sleep(1.0)  # measured at full size before batch arrives
        tl.say(f"serving running; batch: {batch.count} tasks at a time, {how}")
        async with sdk.Driver(batch, sdk.FrameworkInfo(name="batch"), master=cluster.master):
            await asyncio.sleep(s.window)
        state = await cluster.state()
    evicted = sum(k.ended["EVICTED"] for k in (serving, batch))
    tl.say(
        f"after {s.window:g} s: {serving.restarts} serving restarts, {evicted} evictions, "
        f"{batch.finished} batch tasks completed"
    )
    pressured = sum(1 for a in state.agents if a.usage.memory_pressure)
    return {
        "serving_restarts": serving.restarts,
        "serving_evicted": serving.ended["EVICTED"],
        "evictions": evicted,
        "batch_evicted": batch.ended["EVICTED"],
        "batch_completed": batch.finished,
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
    fix="batch with modest requests (charged, so placement counts them) and the low priority "
    "class batch (-100): under pressure the agent evicts the lowest priority first, so batch "
    "tasks go and are retried, serving keeps running",
    agents=_agents,
    run=_run,
    agent_args=(
        *("--usage-interval", "0.3", "--eviction-hard", f"memory.available<{HARD}"),
        *("--eviction-pressure-transition", "1", "--kill-grace-period", "1"),
    ),
)
