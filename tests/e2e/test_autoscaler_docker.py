"""The autoscaler's ``docker`` provider on a real Docker engine (issue #47): pending work adds
a node that is a container of the project's image running ``corral agent``; the agent
registers under the node's name and runs the work; once the work ended and the unneeded time
passed the node is drained, removed from the master and its container deleted.

The project's image (``CORRAL_TEST_CORRAL_IMAGE``, default ``corral:latest``; ``.ci/run``
builds it from the Dockerfile on the local base image) must be on the engine: without it, or
without an engine, the test skips with the reason, and fails in CI. Every container the test's
autoscaler starts carries its state dir as a label, and the test removes all of them at its
end, whatever happened.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from corral.autoscaler.providers import LABEL_NODE, LABEL_STATE
from corral.frameworks import sdk
from corral.frameworks.sdk.testing import LocalCluster
from corral.tls import local_credential_dir
from tests.integration.test_autoscaler import (
    FAST,
    Autoscaler,
    Batch,
    agent_names,
    config_file,
    group,
)

pytestmark = pytest.mark.e2e
IMAGE = os.environ.get("CORRAL_TEST_CORRAL_IMAGE", "corral:latest")


def docker(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["docker", *args], capture_output=True, text=True, timeout=60, check=False
    )


@pytest.fixture
def image() -> str:
    try:
        engine = docker("info", "--format", "{{.ServerVersion}}").returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        engine = False
    why = ""
    if not engine:
        why = "no Docker engine answers (scripts/ensure_docker.sh starts one)"
    elif docker("image", "inspect", IMAGE).returncode != 0:
        why = f"the project's image {IMAGE} is not on the engine (.ci/run builds it)"
    if why:
        if os.environ.get("CI"):
            pytest.fail(f"the docker provider's test must run in CI, and {why}")
        pytest.skip(why)
    return IMAGE


def containers(state: Path) -> list[dict[str, str]]:
    """Containers (running or not) of the autoscaler whose state dir is ``state``."""
    out = docker("ps", "-a", "--filter", f"label={LABEL_STATE}={state.absolute()}",
                 "--format", "{{json .}}")  # fmt: skip
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


@pytest.fixture
async def cluster(tmp_path: Path, image: str) -> AsyncIterator[LocalCluster]:
    del image
    async with LocalCluster(agents=0, work_dir=tmp_path / "cluster", master_args=FAST) as c:
        yield c


async def test_pending_work_adds_a_container_agent_that_runs_it_and_removal_deletes_it(
    tmp_path: Path, cluster: LocalCluster, image: str
) -> None:
    state = tmp_path / "state"
    # The agent in the container dials the master on this host's loopback (network host) with
    # the test's credential, mounted read-only (as root in the container: the key is 0600).
    boxes = group(
        "boxes",
        "cpus:2;mem:1024;disk:100",
        2,
        provider="docker",
        docker={
            "image": image,
            "network": "host",
            "volumes": [f"{local_credential_dir()}:/tls:ro"],
            "user": "0",
        },
    )
    boxes["agent-args"] = ["--tls-dir", "/tls"]
    config = config_file(tmp_path / "as.json", [boxes])
    a = await Autoscaler(state, cluster.master, tmp_path / "as.log", "--config",
                         str(config)).wait_ready()  # fmt: skip
    try:
        batch = Batch(count=2, seconds=3)
        async with sdk.Driver(batch, sdk.FrameworkInfo(name="batch"), cluster.master) as d:
            await d.set_demands([sdk.Demand("work", 2, cpus=1, mem=64)])
            # The node's container is on the engine, labelled, and its agent registers.
            await a.wait(lambda: _running(state), "the node's container to run", timeout=90)
            box = containers(state)
            assert len(box) == 1 and f"{LABEL_NODE}=boxes-1" in box[0]["Labels"], box
            assert box[0]["Image"] == image
            await a.wait(lambda: _registered(cluster), "boxes-1 to register", timeout=90)
            await asyncio.wait_for(batch.done.wait(), 90)
            up = await a.events("TriggeredScaleUp")
            assert len(up) == 1 and "group boxes: +1 node (boxes-1)" in up[0]["message"], up
            assert len(batch.agents) == 1  # both tasks ran on the container's agent
            # The work ended: the node is drained, forgotten by the master, its container gone.
            await a.wait(lambda: _all_gone(a, cluster, state), "the node and its container "
                         "removed", timeout=120)  # fmt: skip
            assert [e["subject"] for e in await a.events("ScaleDown")] == ["boxes-1"]
    finally:
        a.stop()
        left = containers(state)
        if left:
            docker("rm", "-f", *(c["ID"] for c in left))
    assert left == [], "a node's container outlived its scale-down"


async def _running(state: Path) -> bool:
    rows = await asyncio.to_thread(containers, state)
    return any(r["State"] == "running" for r in rows)


async def _registered(cluster: LocalCluster) -> bool:
    return "boxes-1" in await agent_names(cluster)


async def _all_gone(a: Autoscaler, cluster: LocalCluster, state: Path) -> bool:
    gone = not await a.nodes() and not await agent_names(cluster)
    return gone and not await asyncio.to_thread(containers, state)
