"""Faults under load on a real cluster (master, agents and tasks as processes on 127.0.0.1),
each checked over the whole run by checker.py. Run with ``make chaos``."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from corral.frameworks import sdk
from corral.frameworks.sdk.testing import LocalCluster
from tests.chaos.checker import Snapshots, check_run
from tests.chaos.workload import Workload

CORRAL = (sys.executable, "-m", "corral.cli.main")
AGENTS = 3
AGENT_RESOURCES = "cpus:2;mem:1024;disk:1000;gpus:0;ports:[31000-31100]"
AGENT_TIMEOUT = 3.0
REREGISTER_TIMEOUT = 5.0
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
) -> Snapshots:
    """Run ``workload``; once tasks have finished, inject ``fault``; keep launching until more
    tasks have finished after it; then stop launching and wait for every task to end."""
    snapshots = Snapshots(cluster)
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


def _done(workload: Workload) -> int:
    return sum(1 for s in workload.tasks.values() if "FINISHED" in s.states)


async def agent_of(cluster: LocalCluster, agent_id: str) -> str:
    for name in cluster.processes:
        checkpoint = cluster.work_dir / name / "agent_id"
        if name.startswith("agent-") and checkpoint.exists() and agent_id in checkpoint.read_text():
            return name
    raise AssertionError(f"no agent process has id {agent_id}")


async def test_master_kill9_and_restart_loses_no_task(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    workload = Workload(tmp_path / "markers")

    async def fault(_driver: sdk.Driver) -> None:
        await cluster.kill("master")
        await asyncio.sleep(1.0)  # down for a while: agents and the framework retry meanwhile
        await cluster.restart_master(kill=False)

    await under_load(cluster, workload, fault)
    finals = check_run(workload)
    assert finals["FINISHED"] >= 20


async def test_an_agent_lost_while_the_master_is_down_is_reported_within_the_timeout(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    workload = Workload(tmp_path / "markers", seconds=2.0)
    lost: dict[str, str] = {}

    async def fault(_driver: sdk.Driver) -> None:
        victim = next(s.agent_id for s in workload.tasks.values() if s.states[-1:] == ["RUNNING"])
        lost["agent"] = victim
        await cluster.kill("master")
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

    async def fault(_driver: sdk.Driver) -> None:
        victim = next(s.agent_id for s in workload.tasks.values() if s.states[-1:] == ["RUNNING"])
        await cluster.restart_agent(await agent_of(cluster, victim))

    await under_load(cluster, workload, fault)
    finals = check_run(workload)
    assert set(finals) == {"FINISHED"}
