"""A serving app in a container on a real Docker engine (issue #43): Marathon's
``container.docker`` app definition, its instances published on host ports from their offers,
health-checked over HTTP on the mapped host port and ready by a command run inside the
container (the engine's exec), and a rolling restart (``corral app restart``) during which
every endpoint the service lists answers and some endpoint is always listed."""

from __future__ import annotations

import asyncio
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from corral.frameworks.sdk.testing import LocalCluster
from tests.docker_engine import (
    containers_under,
    docker_cluster,
    inspect,
    require_docker,
)
from tests.integration.serving_service import ServingProcess, until_async

pytestmark = pytest.mark.e2e
WAIT = 120.0
PORT_INSIDE = 8123  # the app's port in its container; its host port comes from the offer
CHECK = {"interval": 0.5, "timeout": 3}


@pytest.fixture
def image() -> str:
    return require_docker()


@pytest.fixture
async def cluster(tmp_path: Path, image: str) -> AsyncIterator[LocalCluster]:
    async with docker_cluster(
        tmp_path,
        "cpus:2;mem:1024;disk:1000;ports:{ports}",
        ("--hostname", "127.0.0.1", "--kill-grace-period", "3"),
        agents=2,
        work_dir=tmp_path / "cluster",
    ) as c:
        yield c


def web_in_a_container(image: str) -> dict[str, Any]:
    return {
        # The file marks the container's own filesystem: the readiness check finds it only if
        # it runs inside the container.
        "command": f"touch /tmp/in-the-container && exec python3 -m http.server {PORT_INSIDE}",
        "instances": 2,
        "cpus": 0.25,
        "mem": 64,
        "container": {
            "type": "DOCKER",
            "docker": {
                "image": image,
                "network": "BRIDGE",
                "portMappings": [{"containerPort": PORT_INSIDE, "hostPort": 0, "name": "http"}],
            },
        },
        "health_check": {"protocol": "HTTP", "path": "/", "grace_period": 30, **CHECK},
        "readiness_check": {
            "protocol": "COMMAND",
            "command": "test -f /tmp/in-the-container",
            **CHECK,
        },
        "backoff": {"initial": 0.2, "max": 1},
        "drain_seconds": 1,
    }


def answers(host: str, port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://{host}:{port}/", timeout=5) as r:
            return bool(r.status == 200)
    except OSError:
        return False


async def deployed(s: ServingProcess, cluster: LocalCluster, revision: int) -> Any:
    async def check() -> Any:
        app = await s.ok("GET", "/v1/apps/web")
        done = app["revision"] == revision and app["deployment"]["state"] == "succeeded"
        return app if done else None

    return await until_async(
        check, WAIT, f"revision {revision} of web deployed", lambda: s.logs() + cluster.logs()
    )


async def test_an_app_in_a_container_is_healthy_on_its_mapped_port_and_restarts_without_downtime(
    tmp_path: Path, cluster: LocalCluster, image: str
) -> None:
    s = await ServingProcess(
        tmp_path / "state", cluster.master, tmp_path / "serving.log"
    ).wait_ready()
    try:
        status, answer = await s.call("PUT", "/v1/apps/web", web_in_a_container(image))
        assert status == 201, answer
        await deployed(s, cluster, 1)
        first = (await s.ok("GET", "/v1/apps/web/endpoints"))["endpoints"]
        assert len(first) == 2
        for e in first:
            (port,) = e["ports"]
            assert port != PORT_INSIDE
            assert await asyncio.to_thread(answers, e["host"], port), e
        # The engine's own word: each container publishes its port on the endpoint's port.
        boxes = containers_under(tmp_path)
        published = set()
        for box in boxes:
            bindings = inspect(str(box["ID"]))["HostConfig"]["PortBindings"]
            published |= {int(b["HostPort"]) for b in bindings[f"{PORT_INSIDE}/tcp"]}
        assert published == {e["ports"][0] for e in first}

        # A rolling restart, watched: every listed endpoint answers, and both are always listed.
        polls: list[tuple[int, list[str]]] = []
        done = asyncio.Event()

        async def watch() -> None:
            while not done.is_set():
                listed = (await s.ok("GET", "/v1/apps/web/endpoints"))["endpoints"]
                dead = [
                    f"{e['task_id']} at {e['host']}:{e['ports'][0]}"
                    for e in listed
                    if not await asyncio.to_thread(answers, e["host"], e["ports"][0])
                ]
                polls.append((len(listed), dead))
                await asyncio.sleep(0.1)

        watcher = asyncio.ensure_future(watch())
        try:
            restarted = await asyncio.to_thread(s.corral, "restart", "web")
            assert restarted.returncode == 0, restarted.stderr
            app = await deployed(s, cluster, 2)
        finally:
            done.set()
            await watcher
        after = (await s.ok("GET", "/v1/apps/web/endpoints"))["endpoints"]
        assert app["ready"] == 2 and len(after) == 2
        assert not {e["task_id"] for e in after} & {e["task_id"] for e in first}
        assert len(polls) > 10, polls
        assert [p for p in polls if p[1]] == [], "listed endpoints that did not answer"
        assert min(n for n, _ in polls) >= 2, polls  # minimum_health_capacity 1 of 2
        for e in after:
            assert await asyncio.to_thread(answers, e["host"], e["ports"][0]), e
    finally:
        s.stop()
