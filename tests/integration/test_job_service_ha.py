"""Two job services on a real ZooKeeper (`corral jobs serve --zk`), as on two hosts: one leads,
the other answers 503 naming it; a kill -9 of the leader while a job runs, and the standby
leads, takes the job back (no task run twice, the job completes) and keeps the queue's order."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from corral.frameworks.sdk.testing import LocalCluster
from corral.loadtest.zookeeper import LocalZooKeeper
from tests.integration.job_service import JobsProcess, until, until_async
from tests.integration.test_job_service import _live_count, batch, cluster, queue
from tests.zk import zookeeper

__all__ = ["cluster", "zookeeper"]  # the fixtures, used by name

pytestmark = pytest.mark.e2e

SESSION = os.environ.get("CORRAL_TEST_SESSION", "3")


def leading(s: JobsProcess) -> bool:
    try:
        return bool(json.loads(s.ready.read_text()).get("leading"))
    except (OSError, ValueError):
        return False


async def test_the_standby_takes_over_a_killed_leader_and_the_job_completes(
    tmp_path: Path, cluster: LocalCluster, zookeeper: LocalZooKeeper
) -> None:
    queues = tmp_path / "queues.json"
    queues.write_text(json.dumps({"cluster_queues": [queue("q", 2)]}))
    zk = ("--zk", zookeeper.url("/corral/jobs"), "--zk-session-timeout", SESSION)
    args = ("--queues", str(queues), *zk)
    first = JobsProcess(tmp_path / "a", cluster.master, tmp_path / "jobs-a.log", *args)
    second: JobsProcess | None = None
    marks = tmp_path / "marks"
    marks.mkdir()
    mark = f"echo $CORRAL_TASK_ID >> {marks}/$CORRAL_STAGE-$CORRAL_TASK_INDEX"
    job = {
        "name": "etl",
        "queue": "q",
        "stages": [
            {"name": "map", "tasks": 2, "cpus": 1, "mem": 32, "command": f"{mark}; sleep 8"},
            {"name": "reduce", "tasks": 1, "cpus": 1, "mem": 32, "command": mark},
        ],
    }
    try:
        await first.wait_ready()
        await until(lambda: leading(first), 30, "the first service to lead", first.logs())
        second = await JobsProcess(
            tmp_path / "b", cluster.master, tmp_path / "jobs-b.log", *args
        ).wait_ready()
        status, answer = await second.call("GET", "/v1/jobs")
        assert status == 503 and answer["leader"] == first.url, answer

        await first.ok("POST", "/v1/jobs", job)
        await first.ok("POST", "/v1/jobs", batch("next", "q", 2, "true"))
        before = await first.wait_phase("etl", "Admitted")
        await until_async(
            lambda: _live_count(cluster, before["framework_id"], 2), 30, "map's tasks", first.logs
        )
        first.kill9()
        killed_at = time.monotonic()
        await until(
            lambda: leading(second), 20, "the standby to lead", first.logs() + second.logs()
        )
        assert time.monotonic() - killed_at < 10
        again = await second.job("etl")
        assert again["framework_id"] == before["framework_id"]
        assert (await second.job("next"))["position"] in (0, None)
        done = await second.wait_phase("etl", "Succeeded", timeout=90)
        assert done["progress"]["attempts"] == 3, done
        for name in ("map-0", "map-1", "reduce-0"):
            lines = (marks / name).read_text().split()
            assert len(lines) == 1, f"{name} ran {len(lines)} times: {lines}"
        await second.wait_phase("next", "Succeeded", timeout=60)
    finally:
        first.stop()
        if second is not None:
            second.stop()
