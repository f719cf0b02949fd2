"""docker-compose.yml checks: static validity (fast, whenever a compose tool is installed) and the
full smoke run on a real engine (minutes; only with CORRAL_COMPOSE_SMOKE=1, as root).

The static checks need a compose tool, found when this module is collected. Elsewhere they are
skipped without one; in CI (``CI`` set) `.ci/run` installs one first
(``scripts/ensure_docker.sh --packages-only``) and a missing tool fails them, never a silent
skip, as the ZooKeeper and browser tests do."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
# `certs` makes the cluster's CA and each service's certificate once (docs/security.md).
SERVICES = {"certs", "master", "agent", "agent-b", "agent-spot", "serving", "hello"}
# `docker compose --profile ha up`: a ZooKeeper, three masters electing a leader in it, agents.
HA_SERVICES = {"zookeeper", "master-1", "master-2", "master-3", "agent-ha", "agent-ha-b"}
HA_MASTERS = "master-1:5050,master-2:5050,master-3:5050"
ZK_URL = "zk://zookeeper:2181/corral"


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
NO_TOOL = "no docker-compose or docker compose installed (scripts/ensure_docker.sh installs one)"


def tool_params() -> list[object]:
    """One case per compose tool found; without any, one case that fails in CI, else skips."""
    if TOOLS:
        return [pytest.param(tool, id=" ".join(tool)) for tool in TOOLS]
    missing = pytest.mark.skipif(not os.environ.get("CI"), reason=NO_TOOL)
    return [pytest.param(None, id="no-compose-tool", marks=missing)]


def found(tool: list[str] | None) -> list[str]:
    if tool is None:
        pytest.fail(f"CI must run the compose file checks, and there is {NO_TOOL}")
    return tool


def compose_config(tool: list[str], *args: str, **env: str) -> str:
    """``compose config ARGS`` on the repository's file (the smoke test's variables unset)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CORRAL_", "COMPOSE_"))}
    result = subprocess.run(
        [*tool, "-f", str(REPO / "docker-compose.yml"), *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
        env={**base, "COMPOSE_PROJECT_NAME": "corralcheck", **env},
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("tool", tool_params())
def test_compose_file_is_valid_and_declares_the_cluster(tool: list[str] | None) -> None:
    tool = found(tool)
    compose_config(tool, "config", "-q")
    compose_config(tool, "--profile", "ha", "config", "-q")
    # Without the profile v2 lists only the default services, v1.29 every one (its `up` still
    # starts only the default ones); with it, both list the HA cluster too.
    listed = set(compose_config(tool, "config", "--services").split())
    assert listed in (SERVICES, SERVICES | HA_SERVICES)
    with_ha = set(compose_config(tool, "--profile", "ha", "config", "--services").split())
    assert with_ha == SERVICES | HA_SERVICES
    assert compose_config(tool, "config", "--volumes").split() == [
        "master-data",
        "serving-data",
        "zookeeper-data",
        "pki",
    ]


@pytest.mark.parametrize("tool", tool_params())
def test_the_ha_profile_is_one_zookeeper_and_three_masters(tool: list[str] | None) -> None:
    tool = found(tool)
    services = yaml.safe_load(compose_config(tool, "--profile", "ha", "config"))["services"]
    for name in SERVICES:
        assert not services[name].get("profiles"), f"{name} must run without a profile"
    for name in HA_SERVICES:
        assert services[name].get("profiles") == ["ha"], f"{name} must be in the ha profile only"
    zookeeper = services["zookeeper"]
    assert zookeeper["image"] == "zookeeper:3.8"
    # Its data (the HA cluster's registry) on a named volume: v1 prints "SOURCE:TARGET:rw".
    mounts = [
        v if isinstance(v, dict) else dict(zip(("source", "target"), v.split(":"), strict=False))
        for v in zookeeper["volumes"]
    ]
    assert {"source": "zookeeper-data", "target": "/data"} in [
        {"source": m.get("source"), "target": m.get("target")} for m in mounts
    ], mounts
    advertised = set()
    for name in ("master-1", "master-2", "master-3"):
        command = services[name]["command"]
        assert command[0] == "master" and f"--zk={ZK_URL}" in command, command
        assert services[name]["depends_on"]["zookeeper"]["condition"] == "service_healthy"
        advertised |= {a for a in command if a.startswith("--advertise-host=")}
    assert advertised == {f"--advertise-host=master-{i}" for i in (1, 2, 3)}
    assert f"--zk={ZK_URL}" in services["agent-ha"]["command"]
    assert f"--master={HA_MASTERS}" in services["agent-ha-b"]["command"]
    # The smoke test runs a local build (no registry here) through the same definition.
    local = yaml.safe_load(
        compose_config(
            tool, "--profile", "ha", "config", CORRAL_ZOOKEEPER_IMAGE="corral-zookeeper:bookworm"
        )
    )["services"]["zookeeper"]
    assert local["image"] == "corral-zookeeper:bookworm"


@pytest.mark.skipif(
    os.environ.get("CORRAL_COMPOSE_SMOKE") != "1",
    reason="set CORRAL_COMPOSE_SMOKE=1 to run the Docker smoke test (minutes, needs root)",
)
def test_compose_smoke_on_a_real_engine() -> None:
    result = subprocess.run(
        ["bash", str(REPO / "tests/e2e/compose_smoke.sh")], cwd=REPO, check=False
    )
    assert result.returncode == 0, "compose_smoke.sh failed (its output above says where)"
