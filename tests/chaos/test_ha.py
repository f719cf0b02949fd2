"""Three masters on a real ZooKeeper under load (real masters, agents and tasks as processes on
127.0.0.1), each run checked by checker.py: no task lost, run twice or ended twice.

- kill -9 the leader, five times: a standby leads and offers flow again; the failover time
  (the leader's death to the framework's next offers) is printed, with its median.
- SIGSTOP the leader past its session timeout, then SIGCONT: it has stepped down (it exits
  with the leadership-lost status the moment it sees its session gone) and its epoch is
  below the new leader's, so agents and the registry refuse it.
- stop ZooKeeper: the leader stops acting (no two masters ever act), and the cluster resumes
  when ZooKeeper returns.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from corral.frameworks import sdk
from corral.loadtest.zookeeper import LocalZooKeeper
from corral.master.ha.candidate import LEADERSHIP_LOST
from tests.chaos.checker import check_run
from tests.chaos.test_chaos import AGENT_RESOURCES, AGENTS, MASTER_ARGS, WAIT, _done, under_load
from tests.chaos.workload import Workload
from tests.ha_cluster import HaCluster
from tests.zk import zookeeper

__all__ = ["zookeeper"]  # the fixture, used by name

SESSION_TIMEOUT = 2.0


class TimedWorkload(Workload):
    """Remembers when each batch of offers arrived (the loop's clock)."""

    def __init__(self, markers: Path) -> None:
        super().__init__(markers)
        self.offer_times: list[float] = []

    async def offers(self, driver: sdk.Driver, offers: list[sdk.Offer]) -> None:
        self.offer_times.append(time.monotonic())
        self.changed.set()
        await super().offers(driver, offers)

    async def offers_after(self, t: float) -> float:
        """Seconds from ``t`` to the first offers after it (waits for them)."""
        await self.until("offers after the fault", lambda: self.offer_times[-1:] > [t], WAIT)
        return next(x for x in self.offer_times if x > t) - t


@pytest.fixture
async def cluster(zookeeper: LocalZooKeeper, tmp_path: Path) -> AsyncIterator[HaCluster]:
    async with HaCluster(
        zookeeper,
        masters=3,
        session_timeout=SESSION_TIMEOUT,
        agents=AGENTS,
        agent_resources=AGENT_RESOURCES,
        master_args=MASTER_ARGS,
        work_dir=tmp_path / "cluster",
    ) as c:
        yield c


def _leading_epochs(cluster: HaCluster) -> list[tuple[str, int, str]]:
    """Every ``leading`` line of every master's log: (timestamp, epoch, master)."""
    found = []
    for name in cluster.masters:
        path = cluster.work_dir / f"{name}.log"
        for line in path.read_text(errors="replace").splitlines():
            if '"event": "leading"' in line:
                record = json.loads(line)
                found.append((record["timestamp"], int(record["epoch"]), name))
    return sorted(found)


def _one_master_per_epoch(cluster: HaCluster) -> None:
    leading = _leading_epochs(cluster)
    epochs = [epoch for _, epoch, _ in leading]
    assert epochs == sorted(set(epochs)), f"an epoch was led twice, or out of order: {leading}"


async def test_leader_kill9_five_times_a_standby_leads_and_no_task_is_lost(
    cluster: HaCluster, tmp_path: Path
) -> None:
    workload = TimedWorkload(tmp_path / "markers")
    failovers: list[float] = []

    async def fault(_driver: sdk.Driver) -> None:
        for _ in range(5):
            leader = await cluster.leader()
            died = time.monotonic()
            await cluster.kill(leader)
            failovers.append(await workload.offers_after(died))
            await cluster.start_master(leader)  # what its supervisor does: a new standby
            before = _done(workload)
            await workload.until("3 tasks ended", lambda b=before: _done(workload) >= b + 3, WAIT)

    await under_load(cluster, workload, fault)
    finals = check_run(workload)
    assert finals["FINISHED"] >= 30
    _one_master_per_epoch(cluster)
    median = statistics.median(failovers)
    print(
        f"\nfailover (leader kill -9 to offers again, {SESSION_TIMEOUT:g} s session): "
        + ", ".join(f"{f:.2f}" for f in failovers)
        + f" s; median {median:.2f} s"
    )


async def test_a_paused_leader_past_its_session_steps_down_and_its_epoch_is_refused(
    cluster: HaCluster, tmp_path: Path
) -> None:
    workload = TimedWorkload(tmp_path / "markers")
    paused: dict[str, object] = {}

    async def fault(_driver: sdk.Driver) -> None:
        old = await cluster.leader()
        health = await asyncio.to_thread(cluster.health, old)
        assert health is not None
        paused.update(name=old, epoch=health["epoch"])
        cluster.pause(old)
        stopped = time.monotonic()
        new = await cluster.leader(timeout=WAIT)  # elected once the old session expired
        assert new != old
        await workload.offers_after(stopped)
        cluster.resume(old)
        proc = cluster.processes[old]
        await asyncio.wait_for(proc.wait(), WAIT)  # it saw its session gone and stepped down
        assert proc.returncode == LEADERSHIP_LOST, cluster.logs()
        log = (cluster.work_dir / f"{old}.log").read_text()
        assert '"event": "leadership_lost"' in log
        now = await asyncio.to_thread(cluster.health, new)
        assert now is not None and now["epoch"] > health["epoch"]
        paused["new_epoch"] = now["epoch"]
        await cluster.start_master(old)

    await under_load(cluster, workload, fault)
    check_run(workload)
    _one_master_per_epoch(cluster)
    assert paused["epoch"] != paused["new_epoch"]


async def test_zookeeper_stopped_the_leader_stops_acting_and_the_cluster_resumes(
    cluster: HaCluster, tmp_path: Path
) -> None:
    workload = TimedWorkload(tmp_path / "markers")

    async def fault(_driver: sdk.Driver) -> None:
        old = await cluster.leader()
        cluster.zookeeper.stop()
        proc = cluster.processes[old]
        # The leader stops acting when its connection goes: it halts and exits.
        await asyncio.wait_for(proc.wait(), WAIT)
        assert proc.returncode == LEADERSHIP_LOST, cluster.logs()
        # No master leads while ZooKeeper is away.
        for name in cluster.masters:
            if cluster.processes[name].returncode is None:
                health = await asyncio.to_thread(cluster.health, name)
                assert health is None or health["role"] != "leader", (name, health)
        await asyncio.to_thread(cluster.zookeeper.start)
        await cluster.start_master(old)
        new = await cluster.leader(timeout=WAIT)
        assert new != old or cluster.processes[old].returncode is None
        await workload.offers_after(time.monotonic())

    await under_load(cluster, workload, fault)
    check_run(workload)
    _one_master_per_epoch(cluster)
