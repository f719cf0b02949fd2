"""Two serving services on a real ZooKeeper (`corral serving serve --zk`), as on two hosts: one
leads, the other answers 503 naming it; a kill -9 of the leader and the standby leads within
10 s with every app and instance kept (the same task ids, nothing launched or killed)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from corral.frameworks.sdk.testing import LocalCluster
from corral.loadtest.zookeeper import LocalZooKeeper
from tests.integration.service_cluster import services_cluster
from tests.integration.serving_service import ServingProcess, until, until_async
from tests.integration.test_serving_service import deployed, live_tasks
from tests.zk import zookeeper

__all__ = ["zookeeper"]  # the fixture, used by name

pytestmark = pytest.mark.e2e

# Seconds: how long ZooKeeper keeps a dead leader's session (CORRAL_TEST_SESSION to measure
# another, e.g. the default 6).
SESSION = os.environ.get("CORRAL_TEST_SESSION", "3")


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    async with services_cluster(tmp_path) as c:
        yield c


def leading(s: ServingProcess) -> bool:
    try:
        return bool(json.loads(s.ready.read_text()).get("leading"))
    except (OSError, ValueError):
        return False


async def test_the_standby_takes_over_a_killed_leader_keeping_every_app_and_instance(
    tmp_path: Path, cluster: LocalCluster, zookeeper: LocalZooKeeper
) -> None:
    zk = ("--zk", zookeeper.url("/corral/serving"), "--zk-session-timeout", SESSION)
    first = ServingProcess(tmp_path / "a", cluster.master, tmp_path / "serving-a.log", *zk)
    second: ServingProcess | None = None
    try:
        await first.wait_ready()
        await until(lambda: leading(first), 30, "the first service to lead", first.logs())
        second = await ServingProcess(
            tmp_path / "b", cluster.master, tmp_path / "serving-b.log", *zk
        ).wait_ready()
        # The standby serves, but only to say who leads.
        status, answer = await second.call("GET", "/v1/apps")
        assert status == 503, answer
        assert answer["leader"] == first.url and "standby" in answer["error"]
        status, health = await second.call("GET", "/v1/health")
        assert (status, health["leading"], health["leader"]) == (200, False, first.url)
        # `corral app` finds the leader in ZooKeeper, or follows a standby's 503 to it.
        for where in (zookeeper.url("/corral/serving"), second.url):
            listed = second.corral("list", "-o", "json", "--serving", where)
            assert listed.returncode == 0, listed.stderr + first.logs() + second.logs()

        await first.ok("PUT", "/v1/apps/web", {"command": "exec sleep 600", "instances": 3})
        await first.ok("PUT", "/v1/apps/worker", {"command": "exec sleep 600", "instances": 2})
        await first.ok("PUT", "/v1/apps/worker/scale", {"instances": 1})
        before = {a: await deployed(first, a, cluster) for a in ("web", "worker")}
        tasks_before = await live_tasks(cluster)
        assert len(tasks_before) == 4

        first.kill9()
        killed_at = time.monotonic()
        await until(
            lambda: leading(second), 20, "the standby to lead", first.logs() + second.logs()
        )
        took = time.monotonic() - killed_at
        assert took < 10, f"the standby took {took:.1f} s to lead\n{second.logs()}"

        async def connected() -> Any:
            apps = {a["id"]: a for a in (await second.ok("GET", "/v1/apps"))["apps"]}
            return len(apps) == 2 and all(a["connected"] for a in apps.values())

        await until_async(connected, 30, "both apps subscribed again", second.logs)
        after = {a: await deployed(second, a, cluster) for a in ("web", "worker")}
        for a in ("web", "worker"):
            assert after[a]["framework_id"] == before[a]["framework_id"]
            assert after[a]["revision"] == before[a]["revision"]
            assert {i["task_id"] for i in after[a]["instances"]} == {
                i["task_id"] for i in before[a]["instances"]
            }
        # Nothing launched or killed over ten allocation cycles.
        await cluster.wait_for_cycles(10, 30)
        assert await live_tasks(cluster) == tasks_before
        history = (await second.ok("GET", "/v1/apps/worker/versions"))["revisions"]
        changes = [(r["revision"], r["change"]) for r in history]
        assert changes == [(1, "create"), (2, "scale 2 -> 1")]
        # The new leader acts: a scale goes through it and its store.
        await second.ok("PUT", "/v1/apps/worker/scale", {"instances": 2})
        again = await deployed(second, "worker", cluster)
        assert again["revision"] == 3 and again["ready"] == 2
        print(f"standby led {took:.2f} s after the leader's kill -9 (session {SESSION} s)")
    finally:
        first.stop()
        if second is not None:
            second.stop()
