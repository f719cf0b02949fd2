"""Usage of container tasks, measured by the engine's stats (issue #43): in the master's view
as a process task's is, and counted by memory-pressure eviction, so a BestEffort container
holding memory is evicted as a BestEffort process would be (tests/integration/test_qos.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from corral.frameworks import sdk
from corral.frameworks.sdk.testing import LocalCluster
from tests.docker_engine import docker_cluster, require_docker
from tests.integration.test_qos import Launcher, agent_usage, events, until_state

pytestmark = pytest.mark.e2e


def holder(name: str, image: str, mib: int, delay: float = 0.0, **kw: float) -> sdk.TaskInfo:
    """A container task that holds ``mib`` MiB (written, so resident) after ``delay`` s."""
    script = f"import time; time.sleep({delay}); b = b'x' * ({mib} * 2**20); time.sleep(600)"
    return sdk.task(
        name, ["python3", "-c", script], task_id=name, container=sdk.docker(image), **kw
    )  # type: ignore[arg-type]


@pytest.fixture
def image() -> str:
    return require_docker()


@pytest.fixture
async def cluster(tmp_path: Path, image: str) -> AsyncIterator[LocalCluster]:
    args = ("--usage-interval", "0.5", "--eviction-hard", "memory.available<150")
    resources = "cpus:4;mem:600;disk:1000;ports:{ports}"
    async with docker_cluster(tmp_path, resources, (*args, "--kill-grace-period", "2")) as c:
        yield c


async def test_container_usage_is_measured_and_memory_pressure_evicts_a_besteffort_container(
    cluster: LocalCluster, image: str
) -> None:
    s = Launcher(
        [holder("guaranteed", image, 150, cpus=0.5, mem=200, cpus_limit=0.5, mem_limit=200)],
        [holder("besteffort", image, 300, delay=3, cpus=0, mem=0)],
    )
    async with sdk.Driver(s, sdk.FrameworkInfo(name="usage"), master=cluster.master):
        # The engine's figure for the Guaranteed container, in the master's state.
        state = await until_state(
            cluster,
            "the guaranteed container's usage",
            lambda st: any(t.info.task_id == "guaranteed" and t.usage.mem > 140 for t in st.tasks),
            timeout=90,
        )
        (g,) = [t for t in state.tasks if t.info.task_id == "guaranteed"]
        assert 140 < g.usage.mem < 200, g.usage
        # Then the BestEffort container's 300 MiB put the agent under 150 MiB available.
        await s.reaches("besteffort", "KILLED", "the BestEffort container evicted")
        v = s.view("besteffort")
        assert v.reason == "EVICTED", v
        assert "memory pressure (hard)" in v.message and "BestEffort" in v.message
        assert s.state_of("guaranteed") == "RUNNING"
        (evicted,) = await events(cluster, "Evicted")
        assert evicted.subject == "besteffort"
        assert agent_usage(await cluster.state()).usage.mem_total == 600
