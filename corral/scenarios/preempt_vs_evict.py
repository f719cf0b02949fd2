"""preempt-vs-evict: in one run the master preempts batch tasks for a serving demand and, on
another agent, memory pressure makes the agent evict; the statuses and events tell the two
apart. Read by exit codes alone (the "without fix" figures) both are plain kills."""

from __future__ import annotations

from dataclasses import dataclass

from corral.frameworks import sdk
from corral.frameworks.sdk.testing import LocalCluster
from corral.scenarios.base import Figures, Scenario, Timeline, must
from corral.scenarios.keepers import Keeper, exits_text, hog
from corral.v1 import operator_pb2 as op
from corral.v1 import operator_pb2_grpc as op_grpc

CPU_ZONE, MEM_ZONE = "cpu", "mem"
AGENT_MEM = 640
HARD = 96


@dataclass(frozen=True)
class Size:
    batch: int  # 1-cpu batch tasks filling the cpu agent (its cpus)
    scratch: int  # BestEffort tasks of 100 MiB beside the memory hog


SIZES = {"small": Size(4, 2), "full": Size(8, 3)}


def _agents(size: str) -> list[tuple[str, str, dict[str, str]]]:
    s = SIZES[size]
    return [
        ("cpu-0", f"cpus:{s.batch};mem:2048;disk:1000", {"zone": CPU_ZONE}),
        ("mem-0", f"cpus:4;mem:{AGENT_MEM};disk:1000", {"zone": MEM_ZONE}),
    ]


async def _events(cluster: LocalCluster, reason: str) -> set[str]:
    async with cluster.channel() as channel:
        stub = op_grpc.OperatorStub(channel)  # type: ignore[no-untyped-call]
        got: op.ClusterEvents = await stub.GetEvents(op.GetEventsRequest(reason=reason), timeout=5)
    return {e.subject for e in got.events}


async def _run(cluster: LocalCluster, tl: Timeline, with_fix: bool, size: str) -> Figures:
    s = SIZES[size]
    master = cluster.master
    sleep = ["sleep", "3600"]
    batch = Keeper("batch", s.batch, sleep, cpus=1, mem=32, cls="batch", zone=CPU_ZONE)
    web = Keeper("web", s.batch // 2, sleep, cpus=2, mem=64, cls="serving", zone=CPU_ZONE)
    hogs = Keeper("hog", 1, hog(450), cpus=1, mem=500, cpus_limit=1, mem_limit=500, zone=MEM_ZONE)
    scratch = Keeper("scratch", s.scratch, hog(100), zone=MEM_ZONE, relaunch=False)
    async with (
        sdk.Driver(batch, sdk.FrameworkInfo(name="batch"), master=master),
        sdk.Driver(hogs, sdk.FrameworkInfo(name="hog"), master=master),
    ):
        await must(lambda: len(batch.running) == s.batch, 60, "batch filling the cpu agent")
        tl.say(f"batch holds all {s.batch} cpus of {CPU_ZONE}-0 (class batch)")
        await must(lambda: len(hogs.running) == 1, 60, "the memory hog running")
        async with (
            sdk.Driver(web, sdk.FrameworkInfo(name="web"), master=master),
            sdk.Driver(scratch, sdk.FrameworkInfo(name="scratch"), master=master),
        ):
            tl.say(f"serving wants {web.count} instances of 2 cpus there (class serving)")
            tl.say(f"{s.scratch} BestEffort tasks of 100 MiB join the 450 MiB hog on {MEM_ZONE}-0")
            await must(lambda: len(web.running) == web.count, 60, "serving placed by preemption")
            await must(lambda: len(scratch.killed) == s.scratch, 60, "the evictions")
            preempted_events = await _events(cluster, "Preempted")
            evicted_events = await _events(cluster, "Evicted")
    killed = {**batch.killed, **scratch.killed}
    preempted = {t for t, why in batch.killed.items() if why == "PREEMPTED"}
    evicted = {t for t, why in scratch.killed.items() if why == "EVICTED"}
    # The true cause is where the task ran: the cpu agent is never short of memory, the memory
    # agent's tasks are never preempted (no demand wants its room).
    wrong = {t for t in batch.killed if t not in preempted or t in evicted_events}
    wrong |= {t for t in scratch.killed if t not in evicted or t in preempted_events}
    wrong |= preempted ^ (preempted_events & set(batch.killed))
    wrong |= evicted ^ (evicted_events & set(scratch.killed))
    tl.say(
        f"{len(killed)} tasks killed: {len(preempted)} PREEMPTED (Preempted events: "
        f"{len(preempted_events)}), {len(evicted)} EVICTED (Evicted events: "
        f"{len(evicted_events)}); their exit statuses alone say only: "
        f"{exits_text(batch.exits + scratch.exits)}"
    )
    by_code = {
        "killed": len(killed),
        "preempted": 0,  # an exit status (a signal) names no cause
        "evicted": 0,
        "misattributed": len(killed),  # every kill read as just a kill: cause unknown
    }
    return {
        "without_fix": by_code,
        "with_fix": {
            "killed": len(killed),
            "preempted": len(preempted),
            "evicted": len(evicted),
            "misattributed": len(wrong),
        },
    }


SCENARIO = Scenario(
    name="preempt-vs-evict",
    summary="a preemption and an eviction in one run, told apart by reason and event",
    symptom="tasks die with a signal and the operator blames 'the scheduler' for every kill: "
    "preemption and eviction look the same from exit codes",
    cause="two control loops kill tasks: the master preempts to make room for a higher "
    "priority demand, an agent evicts because its machine is short of memory",
    fix="read the reason, not the exit code: KILLED with reason PREEMPTED (the master, with a "
    "Preempted event naming the preemptor) or EVICTED (the agent, with an Evicted event naming "
    "the pressure and its figures); never one for the other",
    agents=_agents,
    run=_run,
    agent_args=(
        *("--usage-interval", "0.3", "--eviction-hard", f"memory.available<{HARD}"),
        *("--eviction-pressure-transition", "1", "--kill-grace-period", "1"),
    ),
    once=True,
)
