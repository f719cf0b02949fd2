"""QoS on real processes: memory limits, eviction under pressure, pressure as a placement rule,
and revocable resources (issue #36; docs/scheduling.md).

A real master and a real agent (LocalCluster) run tasks that hold real memory
(``corral.scenarios.memhog``). The agent's ``mem`` is far below the machine's, so the pressure is
the agent's own (its mem less what its tasks use): safe to cause on a shared machine. Tests that
measure memory run twice: with the agent's cgroups (v1's memory controller here, v2 elsewhere)
and with the psutil fallback (``--cgroups none``); the cgroup run is skipped only where this
machine has no cgroup the test's user can write, and says so.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from corral.frameworks import sdk
from corral.frameworks.sdk.testing import LocalCluster
from corral.v1 import operator_pb2 as op
from corral.v1 import operator_pb2_grpc as op_grpc
from tests.integration.recording import RecordingScheduler

HOG = (sys.executable, "-m", "corral.scenarios.memhog")
WAIT = 60.0
REVOCABLE = sdk.FrameworkCapability.FRAMEWORK_CAPABILITY_REVOCABLE_RESOURCES


def _cgroups_unwritable() -> str:
    """Why the agent would fall back to psutil here ("" when it can use a cgroup)."""
    from corral.agent.memory_detect import detect

    with tempfile.TemporaryDirectory() as tmp:
        control, notes = detect("auto", Path(tmp))
        control.close()
    if control.name == "psutil":
        return "no writable cgroup on this machine (" + "; ".join(notes) + ")"
    return ""


_NO_CGROUPS = _cgroups_unwritable()
MODES = [
    pytest.param(
        "auto", id="cgroup", marks=pytest.mark.skipif(bool(_NO_CGROUPS), reason=_NO_CGROUPS)
    ),
    pytest.param("none", id="psutil"),
]


def hog(name: str, mib: float, cpus: float = 0.0, mem: float = 0.0, **kw: object) -> sdk.TaskInfo:
    """A task holding ``mib`` MiB, requesting ``cpus`` and ``mem`` (``kw``: limits, ...)."""
    extra = kw.pop("args", ())
    argv = [*HOG, "--mib", str(mib), *extra]  # type: ignore[misc]
    return sdk.task(name, argv, cpus=cpus, mem=mem, task_id=name, **kw)  # type: ignore[arg-type]


class Launcher(RecordingScheduler):
    """Launches each batch of ``todo`` on the next offer it is given that ``on`` accepts (one
    agent here); records every offer; declines the rest for a moment."""

    def __init__(
        self, *batches: Sequence[sdk.TaskInfo], on: Callable[[sdk.Offer], bool] = lambda _: True
    ) -> None:
        super().__init__()
        self.todo = [list(b) for b in batches]
        self.on = on
        self.offers_seen: list[sdk.Offer] = []
        self.refused: list[str] = []

    async def offers(self, driver: sdk.Driver, offers: list[sdk.Offer]) -> None:
        self.offers_seen += offers
        self.changed.set()
        for offer in offers:
            if self.todo and self.todo[0] and self.on(offer):
                try:
                    await driver.launch([offer], self.todo.pop(0), refuse_seconds=0.3)
                except sdk.CallError as exc:
                    self.refused.append(exc.message)
                    self.changed.set()
                    await driver.decline([offer], refuse_seconds=0)  # a refused accept keeps it
            else:
                await driver.decline([offer], refuse_seconds=0.3)

    def state_of(self, task_id: str) -> str:
        last = self.last(task_id)
        return sdk.state_name(last.state) if last is not None else ""

    async def reaches(self, task_id: str, state: str, what: str) -> None:
        await self.until(f"{what} ({task_id} {state})", lambda: self.state_of(task_id) == state)

    def view(self, task_id: str) -> sdk.StatusView:
        last = self.last(task_id)
        assert last is not None, f"no status of {task_id}"
        return sdk.view(last)


async def until_state(
    cluster: LocalCluster, what: str, check: Callable[[op.State], bool], timeout: float = WAIT
) -> op.State:
    """Poll the master's state until ``check`` holds; fail naming ``what``."""
    import asyncio

    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        state = await cluster.state()
        if check(state):
            return state
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
        await asyncio.sleep(0.2)


async def events(cluster: LocalCluster, reason: str) -> list[op.ClusterEvent]:
    async with cluster.channel() as channel:
        stub = op_grpc.OperatorStub(channel)  # type: ignore[no-untyped-call]
        got: op.ClusterEvents = await stub.GetEvents(op.GetEventsRequest(reason=reason), timeout=5)
        return list(got.events)


def revocable(offer: sdk.Offer) -> bool:
    return offer.revocable


def agent_usage(state: op.State) -> op.AgentState:
    (agent,) = state.agents
    return agent


def cluster(mem: int, *agent_args: str) -> LocalCluster:
    return LocalCluster(
        agents=1,
        agent_resources=f"cpus:4;mem:{mem};disk:1000;ports:{{ports}}",
        master_args=("--allocation-interval", "0.2"),
        agent_args=("--usage-interval", "0.3", *agent_args),
    )


# --- memory limits -------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_a_task_over_its_memory_limit_is_stopped(mode: str) -> None:
    async with cluster(1000, "--cgroups", mode) as c:
        s = Launcher([hog("over", 150, cpus=0.1, mem=50, mem_limit=80), hog("within", 40, mem=80)])
        async with sdk.Driver(s, sdk.FrameworkInfo(name="limits"), master=c.master):
            await s.reaches("over", "FAILED", "the task over its limit to end")
            v = s.view("over")
            assert v.reason == "MEMORY_LIMIT", v
            assert "memory limit exceeded" in v.message
            # Measured while it lived (psutil) or killed by the kernel at the limit (cgroup).
            state = await until_state(
                c, "the other task measured", lambda st: agent_usage(st).usage.mem_used > 30
            )
            assert agent_usage(state).usage.source == ("psutil" if mode == "none" else "cgroup-v1")
            assert s.state_of("within") == "RUNNING"
            (event,) = await events(c, "OOMKilled")
            assert event.subject == "over" and "memory limit exceeded" in event.message


# --- eviction -------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_hard_pressure_evicts_besteffort_first_and_guaranteed_survives(mode: str) -> None:
    # 600 MiB agent, hard threshold at 150 MiB available: 160 + 60 + 300 MiB is past it.
    async with cluster(600, "--cgroups", mode, "--eviction-hard", "memory.available<150") as c:
        s = Launcher(
            [
                hog("guaranteed", 150, cpus=0.5, mem=200, cpus_limit=0.5, mem_limit=200),
                hog("burstable", 50, cpus=0.1, mem=100),
            ],
            [hog("besteffort", 300, args=("--ramp", "1"))],
        )
        async with sdk.Driver(s, sdk.FrameworkInfo(name="evict"), master=c.master):
            await s.until(
                "the BestEffort task evicted", lambda: s.state_of("besteffort") == "KILLED"
            )
            v = s.view("besteffort")
            assert v.reason == "EVICTED", v
            assert "memory pressure (hard)" in v.message and "< 150 MiB" in v.message
            assert "BestEffort" in v.message
            state = await until_state(
                c,
                "the pressure to be seen",
                lambda st: bool(agent_usage(st).usage.pressure_message),
            )
            assert s.state_of("guaranteed") == "RUNNING"
            assert s.state_of("burstable") == "RUNNING"
            (evicted,) = await events(c, "Evicted")
            assert evicted.subject == "besteffort" and "memory pressure" in evicted.message
            assert not await events(c, "Preempted")
            # Pressure is measured against the whole mem; the agent offers mem less the hard
            # threshold (kubelet's allocatable), so placement by requests stays out of it.
            assert agent_usage(state).usage.mem_total == 600
            assert agent_usage(state).info.resources.mem == 600 - 150


async def test_a_soft_threshold_waits_its_grace() -> None:
    grace = 3.0
    async with cluster(
        600,
        "--eviction-soft",
        "memory.available<300",
        "--eviction-soft-grace",
        str(grace),
        "--eviction-pressure-transition",
        "0",
    ) as c:
        s = Launcher([hog("guaranteed", 150, cpus=0.5, mem=200, cpus_limit=0.5, mem_limit=200)])
        s.todo.append([hog("besteffort", 200)])
        async with sdk.Driver(s, sdk.FrameworkInfo(name="soft"), master=c.master):
            state = await until_state(
                c, "soft pressure", lambda st: agent_usage(st).usage.memory_pressure == "soft"
            )
            since = agent_usage(state).usage.pressure_since
            assert since > 0
            await s.reaches("besteffort", "KILLED", "the eviction after the grace")
            # Under soft pressure the task ran on for the whole grace (the agent's own clock).
            killing = next(
                st for st in s.statuses["besteffort"] if sdk.state_name(st.state) == "KILLING"
            )
            assert killing.timestamp - since >= grace, (killing.timestamp, since)
            v = s.view("besteffort")
            assert v.reason == "EVICTED" and "(soft)" in v.message and "grace 3 s" in v.message
            assert s.state_of("guaranteed") == "RUNNING"


# --- pressure as a placement rule ------------------------------------------------------------


class BestEffortWork(RecordingScheduler):
    """A framework whose only demand is BestEffort: one task, launched on the first offer."""

    def __init__(self) -> None:
        super().__init__()
        self.offers_seen = 0
        self.launched = False

    async def subscribed(self, driver: sdk.Driver, framework_id: str) -> None:
        await driver.set_demands([sdk.Demand("scratch", 1, cpus=0, mem=0)])

    async def offers(self, driver: sdk.Driver, offers: list[sdk.Offer]) -> None:
        self.offers_seen += len(offers)
        self.changed.set()
        if not self.launched:
            self.launched = True
            await driver.launch(offers[:1], [hog("scratch", 20, demand="scratch")])
            offers = offers[1:]
        if offers:
            await driver.decline(offers, refuse_seconds=0.3)


async def test_pressure_keeps_besteffort_work_off_the_agent_until_it_clears() -> None:
    # Soft pressure with a grace longer than the test: the condition holds, nothing is evicted.
    async with cluster(
        600,
        *("--eviction-soft", "memory.available<250", "--eviction-soft-grace", "600"),
        *("--eviction-pressure-transition", "1"),
    ) as c:
        hogs = Launcher([hog("big", 400, cpus=1, mem=500, cpus_limit=1, mem_limit=500)])
        async with sdk.Driver(hogs, sdk.FrameworkInfo(name="hogs"), master=c.master) as dh:
            await until_state(
                c, "soft pressure", lambda st: agent_usage(st).usage.memory_pressure == "soft"
            )
            assert hogs.state_of("big") == "RUNNING"
            # Work with a request is still placed; a BestEffort task there is refused.
            hogs.todo.append([hog("late-besteffort", 10)])
            await dh.revive()
            await hogs.until("the refusal", lambda: bool(hogs.refused))
            assert "under memory pressure" in hogs.refused[0]
            assert "BestEffort task 'late-besteffort'" in hogs.refused[0]
            be = BestEffortWork()
            async with sdk.Driver(be, sdk.FrameworkInfo(name="scratch"), master=c.master) as dbe:
                await c.wait_for_cycles(10, WAIT)
                assert be.offers_seen == 0  # kept off while the agent is under pressure
                async with c.channel() as channel:
                    stub = op_grpc.OperatorStub(channel)  # type: ignore[no-untyped-call]
                    why = await stub.Explain(
                        op.ExplainRequest(framework_id=dbe.framework_id), timeout=5
                    )
                assert why.reasons.get("agent under memory pressure (no BestEffort work)") == 1
                (pending,) = json.loads(why.pending_demands_json)
                assert "agent under memory pressure" in pending["summary"]
                assert await events(c, "MemoryPressure")
                await dh.kill("big")
                await be.until("the BestEffort task to run once the pressure cleared",
                               lambda: sdk.state_name(be.last("scratch").state) == "RUNNING"
                               if be.last("scratch") else False)  # fmt: skip
                assert await events(c, "MemoryPressureCleared")


# --- revocable resources ----------------------------------------------------------------------


async def test_revocable_tasks_are_offered_run_and_reclaimed_before_anything_else() -> None:
    async with cluster(
        1000, "--revocable", "--revocable-margin", "0.2", "--eviction-hard", "memory.available<100"
    ) as c:
        # Serving asks for 500 MiB and uses ~50 until the test lets it grow to ~400.
        grow = c.work_dir / "grow-serving"
        serving = Launcher(
            [
                hog(
                    "serving",
                    40,
                    cpus=1,
                    mem=500,
                    args=("--step-mib", "350", "--step-file", str(grow)),
                ),
                hog("besteffort", 30),
            ]
        )
        async with sdk.Driver(serving, sdk.FrameworkInfo(name="serving"), master=c.master):
            await serving.reaches("serving", "RUNNING", "serving to run")
            state = await until_state(
                c, "a revocable estimate", lambda st: agent_usage(st).usage.revocable.mem > 200
            )
            assert agent_usage(state).usage.revocable.mem < 500 * 0.8 + 1
            # Batch is offered the agent's unused regular room too: it launches on revocable
            # offers only, so which kind comes first after a cycle is not the test's luck.
            rev = Launcher(on=revocable)
            info = sdk.FrameworkInfo(name="batch", capabilities=[REVOCABLE])
            async with sdk.Driver(rev, info, master=c.master):
                await rev.until(
                    "a revocable offer", lambda: any(o.revocable for o in rev.offers_seen)
                )
                (offer,) = [o for o in rev.offers_seen if o.revocable][:1]
                assert offer.resources.mem > 200 and offer.resources.disk == 0
                # A task not marked revocable is refused on it.
                rev.todo.append([hog("unmarked", 20, cpus=0.1, mem=100)])
                rev.todo.append([hog("borrower", 100, cpus=0.1, mem=150, revocable=True)])
                await rev.until(
                    "the revocable task to run", lambda: rev.state_of("borrower") == "RUNNING"
                )
                assert rev.refused and "must say so" in rev.refused[0]
                state = await c.state()
                (task,) = [t for t in state.tasks if t.info.task_id == "borrower"]
                assert task.info.revocable and task.qos_class == "Burstable"
                # The regular cycle charged it nothing: the agent's used is serving's alone.
                assert agent_usage(state).used.mem == 500
                # Serving grows into its request: the revocable task goes, nothing else.
                grow.touch()
                await rev.until(
                    "the revocable task reclaimed", lambda: rev.state_of("borrower") == "KILLED"
                )
                v = rev.view("borrower")
                assert v.reason == "REVOCABLE_RESOURCES_RECLAIMED", v
                assert serving.state_of("serving") == "RUNNING"
                assert serving.state_of("besteffort") == "RUNNING"
                assert not await events(c, "Evicted")
                assert await events(c, "Reclaimed")
            # A framework without the capability never saw a revocable offer.
            assert not any(o.revocable for o in serving.offers_seen)
            assert any(not o.revocable for o in serving.offers_seen)


async def test_usage_is_in_the_state_the_cli_and_the_metrics() -> None:
    async with cluster(800) as c:
        s = Launcher([hog("t", 60, cpus=0.2, mem=100, mem_limit=200)])
        async with sdk.Driver(s, sdk.FrameworkInfo(name="usage"), master=c.master):
            state = await until_state(
                c,
                "the task's usage",
                lambda st: any(t.usage.mem > 50 for t in st.tasks),
            )
            (task,) = state.tasks
            assert task.qos_class == "Burstable"
            assert task.info.limits.mem == 200
            usage = agent_usage(state).usage
            assert usage.mem_available == pytest.approx(usage.mem_total - usage.mem_used)
            state_json = json.loads(await c.http_get("/api/v1/state"))
            (t,) = state_json["tasks"]
            assert t["qos_class"] == "Burstable" and t["usage"]["mem"] > 50
            assert state_json["agents"][0]["usage"]["mem_total"] == 800
            metrics = (await c.http_get("/metrics")).decode()
            assert "corral_agent_memory_used_mib{" in metrics


async def test_the_batch_framework_runs_on_revocable_resources_with_revocable() -> None:
    from corral.frameworks.batch import run as batch_run
    from corral.frameworks.batch.job import JobSpec, Stage

    async with cluster(1000, "--revocable", "--revocable-margin", "0.2") as c:
        # Serving is allocated all of the agent's cpus and mem and uses little of its mem.
        serving = Launcher([hog("serving", 40, cpus=4, mem=1000)])
        async with sdk.Driver(serving, sdk.FrameworkInfo(name="serving"), master=c.master):
            await serving.reaches("serving", "RUNNING", "serving to run")
            await until_state(
                c, "a revocable estimate", lambda st: agent_usage(st).usage.revocable.mem > 300
            )
            stage = Stage("map", 4, cpus=0.0, mem=64, command="sleep 0.5")
            spec = JobSpec("lend", (stage,), revocable=True)
            summary = await batch_run.run_job(spec, c.master, connect_timeout=10)
            assert (summary["succeeded"], summary["failed"]) == (4, 0), summary
            # No regular room at all: every task ran on lent resources.
            assert summary["revocable_launches"] == 4, summary
