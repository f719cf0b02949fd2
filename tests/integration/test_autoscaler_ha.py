"""Two autoscalers on a real ZooKeeper (`corral autoscaler --zk`), as on two hosts: one leads,
the other answers 503 naming it; a kill -9 of the leader during a scale-up, and the standby
leads, takes the nodes back from the records in ZooKeeper and finishes the work without a
second scale-up."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from pathlib import Path

import pytest

from corral.frameworks import sdk
from corral.frameworks.sdk.testing import LocalCluster
from corral.loadtest.zookeeper import LocalZooKeeper
from tests.integration.serving_service import until
from tests.integration.test_autoscaler import (
    Autoscaler,
    Batch,
    _agent_processes,
    _some_nodes,
    agent_names,
    cluster,
    config_file,
    group,
)
from tests.zk import zookeeper

__all__ = ["cluster", "zookeeper"]  # the fixtures, used by name

pytestmark = pytest.mark.e2e

SESSION = os.environ.get("CORRAL_TEST_SESSION", "3")


def leading(a: Autoscaler) -> bool:
    try:
        return bool(json.loads(a.ready.read_text()).get("leading"))
    except (OSError, ValueError):
        return False


async def test_the_standby_autoscaler_takes_over_and_does_not_scale_up_twice(
    tmp_path: Path, cluster: LocalCluster, zookeeper: LocalZooKeeper
) -> None:
    config = config_file(tmp_path / "as.json", [group("small", "cpus:2;mem:1024;disk:100", 6)])
    zk = ("--zk", zookeeper.url("/corral/autoscaler"), "--zk-session-timeout", SESSION)
    args = ("--config", str(config), *zk)
    first = Autoscaler(tmp_path / "a", cluster.master, tmp_path / "as-a.log", *args)
    second: Autoscaler | None = None
    try:
        await first.wait_ready()
        await until(lambda: leading(first), 30, "the first autoscaler to lead", first.logs())
        second = await Autoscaler(
            tmp_path / "b", cluster.master, tmp_path / "as-b.log", *args
        ).wait_ready()
        status, answer = await second.call("GET", "/v1/nodegroups")
        assert status == 503 and answer["leader"] == first.url, answer
        batch = Batch(count=4, seconds=2)
        async with sdk.Driver(batch, sdk.FrameworkInfo(name="batch"), cluster.master) as d:
            await d.set_demands([sdk.Demand("work", 4, cpus=1, mem=64)])
            made = await first.wait(lambda: _some_nodes(first), "the scale-up's nodes")
            names = sorted(n["name"] for n in made)
            assert names == ["small-1", "small-2"]
            first.kill9()
            killed_at = time.monotonic()
            await until(
                lambda: leading(second), 30, "the standby to lead", first.logs() + second.logs()
            )
            assert time.monotonic() - killed_at < 15
            # The nodes the first one made are the standby's now (their records were in
            # ZooKeeper): the work runs on them, and nothing more is asked of the provider.
            assert sorted(n["name"] for n in await second.nodes()) == names
            await asyncio.wait_for(batch.done.wait(), 90)
            assert await second.events("TriggeredScaleUp") == []
            assert (await agent_names(cluster)) <= set(names)
    finally:
        first.stop()
        if second is not None:
            second.stop()
        for pid in _agent_processes(tmp_path, ""):
            os.killpg(pid, signal.SIGKILL)
