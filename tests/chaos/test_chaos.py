"""Faults under load on a real cluster (master, agents and tasks as processes on 127.0.0.1),
each checked over the whole run by checker.py. Run with ``make chaos``."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import psutil
import pytest

from corral.frameworks import sdk
from corral.frameworks.sdk.testing import LocalCluster
from tests.chaos.checker import Snapshots, check_run
from tests.chaos.workload import Workload

CORRAL = (sys.executable, "-m", "corral.cli.main")
AGENTS = 3
AGENT_RESOURCES = "cpus:2;mem:1024;disk:1000;gpus:0;ports:{ports}"  # the cluster's range
AGENT_TIMEOUT = 3.0
REREGISTER_TIMEOUT = 15.0  # agents back off to a few seconds while the master is down
MASTER_ARGS = (
    *("--allocation-interval", "0.2"),
    *("--agent-timeout", str(AGENT_TIMEOUT), "--agent-heartbeat", "1"),
    *("--agent-reregister-timeout", str(REREGISTER_TIMEOUT)),
)
WAIT = 60.0  # for any one condition, on a loaded 2-core machine
BACKOFF = sdk.Backoff(initial=0.05, maximum=0.5)


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    async with LocalCluster(
        agents=AGENTS,
        agent_resources=AGENT_RESOURCES,
        corral=CORRAL,
        master_args=MASTER_ARGS,
        work_dir=tmp_path / "cluster",
    ) as c:
        yield c


async def under_load(
    cluster: LocalCluster,
    workload: Workload,
    fault: Callable[[sdk.Driver], Awaitable[None]],
    *,
    info: sdk.FrameworkInfo | None = None,
    limits: dict[str, dict[str, float]] | None = None,
) -> Snapshots:
    """Run ``workload``; once tasks have finished, inject ``fault``; keep launching until more
    tasks have finished after it; then stop launching and wait for every task to end."""
    snapshots = Snapshots(cluster, limits=limits or {})
    snapshots.start()
    info = info or sdk.FrameworkInfo(name="chaos", failover_timeout=300)
    try:
        async with sdk.Driver(workload, info, cluster.master, backoff=BACKOFF) as driver:
            await workload.until(
                "10 tasks ended before the fault", lambda: _done(workload) >= 10, WAIT
            )
            before = _done(workload)
            await fault(driver)
            await workload.until(
                "10 more tasks ended after the fault",
                lambda: _done(workload) >= before + 10,
                WAIT,
            )
            workload.launching = False
            await workload.settle(driver)
            await workload.until(
                "every launched task ended",
                lambda: len(workload.ended()) == len(workload.tasks),
                WAIT,
            )
            await driver.teardown()
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{cluster.logs()}") from None
    finally:
        await snapshots.stop()
    assert not snapshots.violations, snapshots.violations[:10]
    assert snapshots.taken > 0
    return snapshots


async def newest_running(workload: Workload) -> str:
    """The agent of the task last seen RUNNING (tasks are in launch order). Tasks start and end
    in waves, so there can be a moment with none running: it waits for the next one. The agents
    are taken when the check holds: between the wait's end and its caller resuming, the last
    running task could end (seen once: an empty list by then)."""
    running: list[str] = []

    def some_running() -> bool:
        running[:] = [s.agent_id for s in workload.tasks.values() if s.states[-1:] == ["RUNNING"]]
        return bool(running)

    await workload.until("a task running when the fault is due", some_running, WAIT)
    return running[-1]


NOT_ENDED = ("STAGING", "STARTING", "RUNNING")


async def live_task_agent(workload: Workload, younger_than: float | None = None) -> str:
    """The agent of the newest task the framework has not seen end whose process is alive now
    (its pid from the task's start marker; a zombie, ended but not yet reaped, is not alive),
    and, with ``younger_than``, started less than that many seconds ago (the marker's mtime):
    it has the rest of its run left. Waits for one, bounded: a task launched just before may
    not have started its process yet."""

    def pick() -> str | None:
        for task_id, seen in reversed(workload.tasks.items()):
            marker = workload.markers / task_id
            if (seen.states[-1:] and seen.states[-1] not in NOT_ENDED) or not marker.exists():
                continue
            if younger_than is not None and time.time() - marker.stat().st_mtime > younger_than:
                continue
            for pid in map(int, marker.read_text().split()):
                with contextlib.suppress(psutil.Error):
                    if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                        return seen.agent_id
        return None

    deadline = asyncio.get_running_loop().time() + WAIT
    while (agent := pick()) is None:
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"no task process alive (younger than {younger_than}) in {WAIT} s")
        await asyncio.sleep(0.05)
    return agent


def _done(workload: Workload) -> int:
    return sum(1 for s in workload.tasks.values() if "FINISHED" in s.states)


async def agent_of(cluster: LocalCluster, agent_id: str) -> str:
    for name in cluster.processes:
        checkpoint = cluster.work_dir / name / "agent_id"
        if name.startswith("agent-") and checkpoint.exists() and agent_id in checkpoint.read_text():
            return name
    raise AssertionError(f"no agent process has id {agent_id}")


async def test_master_kill9_and_restart_loses_no_task_and_keeps_the_quota(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    # The role may use 4 of the cluster's 6 cpus: the limit must hold before and after the
    # restart (the registry brings it back).
    proc = await asyncio.create_subprocess_exec(
        *CORRAL,
        "set",
        "quota",
        "chaos",
        "--limit",
        "cpus:4",
        "--master",
        cluster.master,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await proc.communicate()
    assert proc.returncode == 0, out
    workload = Workload(tmp_path / "markers")

    async def fault(_driver: sdk.Driver) -> None:
        await cluster.kill("master")
        await asyncio.sleep(1.0)  # down for a while: agents and the framework retry meanwhile
        await cluster.restart_master(kill=False)

    info = sdk.FrameworkInfo(name="chaos", role="chaos", failover_timeout=300)
    snapshots = await under_load(
        cluster, workload, fault, info=info, limits={"chaos": {"cpus": 4.0}}
    )
    finals = check_run(workload)
    assert finals["FINISHED"] >= 20
    assert snapshots.peak.get("chaos", 0.0) > 2.0  # the limit was reached for, not idle


async def test_an_agent_lost_while_the_master_is_down_is_reported_within_the_timeout(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    workload = Workload(tmp_path / "markers", seconds=2.0)
    lost: dict[str, str] = {}

    async def fault(_driver: sdk.Driver) -> None:
        # The victim is the agent of a task whose process is alive and started less than 1 s
        # ago, so it has over a second of its 2 s left: the master and then the agent are
        # killed within that, while it runs, and nobody can report it ended. (The framework's
        # RUNNING view lags: its newest RUNNING task could end before the kill, seen in CI
        # twice; picked after the master's death, every live process could end before the
        # pick with no new task to start, seen once.)
        victim = await live_task_agent(workload, younger_than=1.0)
        await cluster.kill("master")
        lost["agent"] = victim
        await cluster.kill(await agent_of(cluster, victim))
        await cluster.restart_master(kill=False)

    await under_load(cluster, workload, fault)
    victim = lost["agent"]

    def allowed(task_id: str, state: str) -> bool:
        on_victim = workload.tasks[task_id].agent_id == victim
        return state == "FINISHED" or (on_victim and state == "LOST")

    finals = check_run(workload, allowed=allowed)
    assert finals["LOST"] >= 1, finals  # the victim's tasks, told by reconciliation
    messages = {m for s in workload.tasks.values() if s.agent_id == victim for m in s.messages}
    assert any("unreachable" in m for m in messages), messages


async def test_agent_kill9_and_restart_reattaches_and_runs_nothing_twice(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    workload = Workload(tmp_path / "markers", seconds=2.0)

    killed: dict[str, str] = {}

    async def fault(_driver: sdk.Driver) -> None:
        victim = await newest_running(workload)
        killed["agent"] = victim
        await cluster.restart_agent(await agent_of(cluster, victim))

    await under_load(cluster, workload, fault)

    def allowed(task_id: str, state: str) -> bool:
        # A launch the killed agent had not checkpointed is DROPPED; one it had checkpointed
        # but whose process it had not started yet FAILED, saying so. The checker holds that
        # neither ran; every task it had started was re-attached.
        seen = workload.tasks[task_id]
        if seen.agent_id != killed["agent"]:
            return state == "FINISHED"
        never_started = state == "FAILED" and any(
            "stopped before the task" in m for m in seen.messages
        )
        if never_started:
            assert not (workload.markers / task_id).exists(), f"{task_id} FAILED yet started"
        return state in ("FINISHED", "DROPPED") or never_started

    finals = check_run(workload, allowed=allowed)
    assert finals["FINISHED"] >= 20, finals


async def test_a_framework_failing_over_within_its_timeout_keeps_its_tasks(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    """The framework's process stops (no teardown) and a new one takes over with its id: it is
    told how every task ended, including those that ended while no one was subscribed."""
    workload = Workload(tmp_path / "markers", seconds=2.0)
    info = sdk.FrameworkInfo(name="chaos", failover_timeout=300)
    snapshots = Snapshots(cluster)
    snapshots.start()
    try:
        async with sdk.Driver(workload, info, cluster.master, backoff=BACKOFF) as first:
            await workload.until("tasks running", lambda: workload.running() >= 4, WAIT)
            framework_id = first.framework_id
            await first.stop()
        workload.launching = False
        gap = sdk.FrameworkInfo(id=framework_id, name="chaos", failover_timeout=300)
        await asyncio.sleep(3.0)  # tasks end while no one is subscribed: the point of the test
        async with sdk.Driver(workload, gap, cluster.master, backoff=BACKOFF) as second:
            await workload.settle(second)
            await workload.until(
                "every task's end told to the new process",
                lambda: len(workload.ended()) == len(workload.tasks),
                WAIT,
            )
            await second.teardown()
    finally:
        await snapshots.stop()
    assert not snapshots.violations, snapshots.violations[:10]
    finals = check_run(workload)
    assert finals["FINISHED"] >= 4


async def test_a_framework_gone_past_its_failover_timeout_has_its_tasks_killed(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    workload = Workload(tmp_path / "markers", seconds=600.0)
    info = sdk.FrameworkInfo(name="chaos", failover_timeout=2)
    async with sdk.Driver(workload, info, cluster.master, backoff=BACKOFF) as driver:
        await workload.until("tasks running", lambda: workload.running() >= 4, WAIT)
        workload.launching = False
        framework_id = driver.framework_id
        await driver.stop()
    loop = asyncio.get_running_loop()
    # RUNNING is reported once the agent started the process; its shell writes its pid a
    # moment later (on a loaded machine, after the status has arrived).
    deadline = loop.time() + WAIT
    while len(pids := _marked_pids(workload.markers)) < 4:
        assert loop.time() < deadline, f"4 tasks RUNNING but only pids {pids} were written"
        await asyncio.sleep(0.05)  # another process writes the file: there is no event to await
    deadline = loop.time() + WAIT
    while any(_alive(p) for p in pids):
        assert loop.time() < deadline, f"task processes outlived the failover timeout: {pids}"
        await asyncio.sleep(0.2)  # other processes' lives: there is no event to await
    state = await cluster.state()
    assert not [t for t in state.tasks if t.info.framework_id == framework_id and _live(t)]
    again = sdk.FrameworkInfo(id=framework_id, name="chaos")
    with pytest.raises(sdk.CallError) as refused:
        async with sdk.Driver(sdk.Scheduler(), again, cluster.master, connect_timeout=10) as late:
            await late.wait()
    assert "was removed" in refused.value.message


def _marked_pids(markers: Path) -> list[int]:
    """The pids the tasks' shells wrote so far (a line each, written whole by ``echo``)."""
    return [int(p) for m in markers.iterdir() for p in m.read_text().split()]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead but not yet reaped by its parent (the agent's shim).
    status = Path(f"/proc/{pid}/status")
    return not (status.exists() and "zombie" in status.read_text())


def _live(task: object) -> bool:
    state = sdk.state_name(task.status.state)  # type: ignore[attr-defined]
    return state not in {"FINISHED", "FAILED", "KILLED", "ERROR", "LOST", "DROPPED", "GONE"}


async def test_a_paused_agent_is_unreachable_then_heals(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    workload = Workload(tmp_path / "markers", seconds=2.0)
    paused: dict[str, str] = {}

    async def fault(_driver: sdk.Driver) -> None:
        # The agent of the newest task whose process is alive: it has the most of its 2 s left
        # when the agent stops, so something is left to report LOST (a RUNNING task in the
        # framework's view may already have ended: the lost-agent test above).
        victim = await live_task_agent(workload)
        paused["agent"] = victim
        name = await agent_of(cluster, victim)
        cluster.pause(name)
        await workload.until(
            "the paused agent's tasks reported LOST",
            lambda: any(
                s.agent_id == victim and "LOST" in s.states for s in workload.tasks.values()
            ),
            WAIT,
        )
        cluster.resume(name)
        await cluster.wait_for_agents(AGENTS, WAIT)  # it re-registers: active again
        before = len(workload.tasks)
        # Healed: its resources are offered again.
        await workload.until(
            "a task launched on the healed agent",
            lambda: any(s.agent_id == victim for s in list(workload.tasks.values())[before:]),
            WAIT,
        )

    await under_load(cluster, workload, fault)
    victim = paused["agent"]

    def allowed(task_id: str, state: str) -> bool:
        on_victim = workload.tasks[task_id].agent_id == victim
        return state == "FINISHED" or (on_victim and state == "LOST")

    finals = check_run(workload, allowed=allowed)
    assert finals["LOST"] >= 1, finals
