"""A real Docker engine and a local image for the container tests (issue #43).

No registry is reachable here, so the tests run ``corral-base:bookworm``, the image
``scripts/build_base_image.sh`` builds. Without an engine answering or without the image the
tests skip with the reason, except in CI (``CI`` set), where ``.ci/run`` starts the engine and
builds the image first and their absence fails the tests, as the ZooKeeper and browser tests do.

Every container a test's agents start is labelled with the agent's work dir (under the test's
own folder): ``containers_under`` finds them and ``remove_containers_under`` removes them, so a
test leaves nothing on the engine whatever happens.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from corral.frameworks.sdk.testing import LocalCluster

IMAGE = os.environ.get("CORRAL_TEST_IMAGE", "corral-base:bookworm")
LABEL_WORK_DIR = "corral.work_dir"


def _docker(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["docker", *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def _why_not() -> str:
    try:
        if _docker("info", "--format", "{{.ServerVersion}}", timeout=15).returncode != 0:
            return "no Docker engine answers (scripts/ensure_docker.sh starts one)"
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"no docker command or engine here ({exc})"
    if _docker("image", "inspect", IMAGE).returncode != 0:
        return f"image {IMAGE} is not on the engine (scripts/build_base_image.sh builds it)"
    return ""


def require_docker() -> str:
    """The image to run; skips (or fails in CI) when the engine or the image is missing."""
    why = _why_not()
    if why:
        if os.environ.get("CI"):
            pytest.fail(f"the container tests must run in CI, and {why}")
        pytest.skip(why)
    return IMAGE


def containers_under(root: Path) -> list[dict[str, Any]]:
    """Every container (running or not) whose agent work dir is under ``root``."""
    out = _docker("ps", "-a", "--filter", f"label={LABEL_WORK_DIR}", "--format", "{{json .}}")
    found = []
    for line in out.stdout.splitlines():
        row = json.loads(line)
        labels = dict(kv.split("=", 1) for kv in str(row.get("Labels", "")).split(",") if "=" in kv)
        if labels.get(LABEL_WORK_DIR, "").startswith(str(root)):
            found.append(row)
    return found


def remove_containers_under(root: Path) -> int:
    rows = containers_under(root)
    if rows:
        _docker("rm", "-f", *(str(r["ID"]) for r in rows))
    return len(rows)


def inspect(container_id: str) -> dict[str, Any]:
    out = _docker("inspect", container_id)
    assert out.returncode == 0, out.stderr
    info: dict[str, Any] = json.loads(out.stdout)[0]
    return info


@contextlib.asynccontextmanager
async def docker_cluster(
    tmp_path: Path,
    agent_resources: str,
    agent_args: Sequence[str] = (),
    agents: int = 1,
    work_dir: Path | None = None,
) -> AsyncIterator[LocalCluster]:
    """A master and ``agents`` agents that run containers (``--containerizers process,docker``
    and ``agent_args``), all registered once entered; every container their agents started is
    removed after, whatever happens (``remove_containers_under``)."""
    cluster = LocalCluster(
        agents=agents,
        work_dir=work_dir or tmp_path,
        agent_resources=agent_resources,
        master_args=("--allocation-interval", "0.2"),
        agent_args=("--containerizers", "process,docker", *agent_args),
    )
    try:
        async with cluster:
            await cluster.wait_for_agents(agents, 30)
            yield cluster
    finally:
        remove_containers_under(tmp_path)
