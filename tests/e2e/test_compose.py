"""docker-compose.yml checks: static validity (fast, whenever a compose tool is installed) and the
full smoke run on a real engine (minutes; only with CORRAL_COMPOSE_SMOKE=1, as root)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
# `certs` makes the cluster's CA and each service's certificate once (docs/security.md).
SERVICES = {"certs", "master", "agent", "agent-b", "agent-spot", "serving", "hello"}


def compose_tools() -> list[list[str]]:
    tools = []
    if shutil.which("docker-compose"):
        tools.append(["docker-compose"])
    if shutil.which("docker"):
        probe = subprocess.run(
            ["docker", "compose", "version"], capture_output=True, text=True, check=False
        )
        if probe.returncode == 0:
            tools.append(["docker", "compose"])
    return tools


TOOLS = compose_tools()


@pytest.mark.skipif(not TOOLS, reason="no docker-compose / docker compose installed")
@pytest.mark.parametrize("tool", TOOLS, ids=[" ".join(t) for t in TOOLS])
def test_compose_file_is_valid_and_declares_the_cluster(tool: list[str]) -> None:
    def config(*args: str) -> str:
        result = subprocess.run(
            [*tool, "-f", str(REPO / "docker-compose.yml"), "config", *args],
            capture_output=True,
            text=True,
            check=False,
            cwd=REPO,
            env={**os.environ, "COMPOSE_PROJECT_NAME": "corralcheck"},
        )
        assert result.returncode == 0, result.stderr
        return result.stdout

    config("-q")
    assert set(config("--services").split()) == SERVICES
    assert config("--volumes").split() == ["master-data", "serving-data", "pki"]


@pytest.mark.skipif(
    os.environ.get("CORRAL_COMPOSE_SMOKE") != "1",
    reason="set CORRAL_COMPOSE_SMOKE=1 to run the Docker smoke test (minutes, needs root)",
)
def test_compose_smoke_on_a_real_engine() -> None:
    result = subprocess.run(
        ["bash", str(REPO / "tests/e2e/compose_smoke.sh")], cwd=REPO, check=False
    )
    assert result.returncode == 0, "compose_smoke.sh failed (its output above says where)"
