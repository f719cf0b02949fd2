"""The cluster the services' tests (serving, jobs) run on: a master with a fast allocation
interval and two agents of 4 cpus, 4 GiB and a block of real ports each, on 127.0.0.1 so
endpoints, health checks and DNS answers are addresses a test can dial."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from corral.frameworks.sdk.testing import LocalCluster

FAST = ("--allocation-interval", "0.2")


@contextlib.asynccontextmanager
async def services_cluster(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    async with LocalCluster(
        agents=2,
        agent_resources="cpus:4;mem:4096;disk:1000;ports:{ports}",
        work_dir=tmp_path / "cluster",
        master_args=FAST,
        agent_args=("--hostname", "127.0.0.1"),
    ) as c:
        await c.wait_for_agents(2, 30)
        yield c
