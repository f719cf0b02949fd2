"""Tenants on the serving service, with real certificates (`corral certs`), a master enforcing
an ACL file, and `corral serving serve` as its own process (docs/security.md, "Services acting
for tenants"): tenant A's apps run in its role and class; what A may not have is refused
through the service (403 and a Denied event) although the service's own principal could have
it; tenant B can neither see nor change A's app, an operator can; a restart keeps the owners;
and the master itself refuses the service a launch for an owner it may not launch for, or
beyond the owner's grants."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from corral.frameworks import sdk
from corral.frameworks.sdk import tls as sdk_tls
from corral.frameworks.sdk.testing import LocalCluster
from corral.v1 import operator_pb2, operator_pb2_grpc
from tests.integration.serving_service import ServingProcess, until_async

pytestmark = pytest.mark.e2e

CORRAL = (sys.executable, "-m", "corral.cli.main")
GPU_TAINT = "gpu-sku=inference:NoSchedule"
ACL = """
version: tenants
rules:
  - name: operators
    cert_roles: [operator]
    operator: ["*"]
    act_for: ["*"]
  # The service could use any role, class and taint itself: none of it reaches a tenant.
  - name: serving-service
    principals: [serving]
    cert_roles: [framework]
    frameworks: {roles: ["*"], priority_classes: ["*"], tolerations: ["*"]}
    launch_for: [team-*]
  - name: team-a
    principals: [team-a]
    frameworks: {roles: [web], priority_classes: [serving]}
  - name: team-b
    principals: [team-b]
    frameworks: {roles: [web], priority_classes: [serving]}
  - name: nodes
    principals: [node-*]
    cert_roles: [agent]
    agents: {attributes: {"*": ["*"]}}
"""
PRINCIPALS = (
    ("ops", "operator", ()),
    ("serving", "framework", ("127.0.0.1",)),
    ("team-a", "framework", ()),
    ("team-b", "framework", ()),
    ("node-1", "agent", ()),
)


def _issue(root: Path, home: Path) -> Path:
    env = {**os.environ, "CORRAL_HOME": str(home)}
    pki = root / "pki"

    def run(*args: str) -> None:
        done = subprocess.run([*CORRAL, *args], capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stderr

    run("certs", "init", "--dir", str(pki))
    for name, role, hosts in PRINCIPALS:
        run(
            "certs",
            "issue",
            name,
            "--role",
            role,
            "--dir",
            str(pki),
            *(f"--host={h}" for h in hosts),
        )
    return pki


class Tenants:
    def __init__(self, cluster: LocalCluster, pki: Path, tmp: Path) -> None:
        self.cluster, self.pki, self.tmp = cluster, pki, tmp
        self.service: ServingProcess | None = None

    def start_service(self, log: str) -> ServingProcess:
        self.service = ServingProcess(
            self.tmp / "state",
            self.cluster.master,
            self.tmp / f"{log}.log",
            *("--tls-dir", str(self.pki / "serving")),
        )
        return self.service

    async def call(self, who: str, method: str, path: str, body: object = None) -> tuple[int, Any]:
        assert self.service is not None
        context = sdk_tls.TLS.from_dir(self.pki / who).ssl_context()
        async with (
            aiohttp.ClientSession() as session,
            session.request(
                method,
                self.service.url + path,
                json=body,
                ssl=context,
                timeout=aiohttp.ClientTimeout(total=30),
            ) as response,
        ):
            return response.status, await response.json()

    async def denied(self, subject: str) -> list[str]:
        """The messages of the Denied events naming ``subject``."""
        async with self.cluster.channel() as ch:
            stub = operator_pb2_grpc.OperatorStub(ch)  # type: ignore[no-untyped-call]
            got = await stub.GetEvents(operator_pb2.GetEventsRequest(reason="Denied"), timeout=10)
        return [e.message for e in got.events if e.subject == subject]

    async def deployed(self, app_id: str, who: str = "team-a") -> Any:
        async def check() -> Any:
            status, answer = await self.call(who, "GET", f"/v1/apps/{app_id}")
            assert status == 200, answer
            return answer if answer["deployment"]["state"] == "succeeded" else None

        assert self.service is not None
        return await until_async(check, 60, f"app {app_id} deployed", self.service.logs)


@pytest.fixture
async def tenants(tmp_path: Path) -> AsyncIterator[Tenants]:
    home = tmp_path / "home"
    home.mkdir()
    pki = await asyncio.to_thread(_issue, tmp_path, home)
    acls = tmp_path / "acls.yaml"
    acls.write_text(ACL)
    async with LocalCluster(
        agents=0,
        work_dir=tmp_path / "cluster",
        master_args=(
            "--tls-dir",
            str(pki / "master"),
            "--acls",
            str(acls),
            "--allocation-interval",
            "0.2",
        ),
        tls=sdk_tls.TLS.from_dir(pki / "ops"),
        agent_tls=sdk_tls.TLS.from_dir(pki / "node-1"),
    ) as c:
        await c.add_agent("node-1", "cpus:4;mem:4096;disk:1000;ports:{ports}")
        await c.wait_for_agents(1, 30)
        t = Tenants(c, pki, tmp_path)
        try:
            yield t
        finally:
            if t.service is not None:
                t.service.stop()


SLEEPER = {"command": "exec sleep 600", "cpus": 0.1, "mem": 16, "role": "web"}


async def test_tenants_own_their_apps_and_ask_only_for_their_own_grants(tenants: Tenants) -> None:
    t = tenants
    await t.start_service("serving-1").wait_ready()
    # Tenant A: an app in its role and class (serving, the default).
    status, answer = await t.call("team-a", "PUT", "/v1/apps/web", SLEEPER)
    assert status == 201, answer
    app = await t.deployed("web")
    assert app["owner"] == "team-a"

    # What A is not granted is refused through the service, though the service is granted it.
    for name, extra, refused in (
        ("sys", {"priority_class": "system"}, "principal team-a may not use priority class system"),
        ("gpu", {"tolerations": [GPU_TAINT]}, f"principal team-a may not tolerate {GPU_TAINT}"),
        ("other", {"role": "batch"}, "principal team-a may not register a framework in role batch"),
    ):
        before = len(await t.denied("team-a"))
        status, answer = await t.call("team-a", "PUT", f"/v1/apps/{name}", {**SLEEPER, **extra})
        assert status == 403, answer
        assert refused in answer["error"] and "no rule grants it" in answer["error"], answer
        assert (await t.call("team-a", "GET", f"/v1/apps/{name}"))[0] == 404  # nothing kept
        events = await t.denied("team-a")
        assert len(events) == before + 1 and refused in events[-1], events
    status, answer = await t.call("team-a", "PUT", "/v1/apps/web/scale", {"instances": 2})
    assert status == 200, answer

    # Tenant B sees none of A's apps and may not read, scale, restart or delete them.
    status, answer = await t.call("team-b", "GET", "/v1/apps")
    assert (status, answer["apps"]) == (200, [])
    for method, path, body in (
        ("GET", "/v1/apps/web", None),
        ("PUT", "/v1/apps/web/scale", {"instances": 0}),
        ("POST", "/v1/apps/web/restart", None),
        ("PUT", "/v1/apps/web", SLEEPER),
        ("DELETE", "/v1/apps/web", None),
    ):
        status, answer = await t.call("team-b", method, path, body)
        assert status == 403, (method, path, answer)
        assert "team-b may not" in answer["error"] and "team-a's" in answer["error"], answer
        assert "principal team-b may not act for team-a" in answer["error"], answer
    # The operator may: its scale runs as A's (reviewed for A), and the app stays A's.
    status, answer = await t.call("ops", "PUT", "/v1/apps/web/scale", {"instances": 1})
    assert status == 200, answer
    status, listed = await t.call("ops", "GET", "/v1/apps")
    assert [(a["id"], a["owner"]) for a in listed["apps"]] == [("web", "team-a")]
    # `corral app list` with A's certificate shows A its app.
    assert t.service is not None
    done = await asyncio.to_thread(
        subprocess.run,
        [*CORRAL, "app", "list", "--serving", t.service.url, "--tls-dir", str(t.pki / "team-a")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and "web" in done.stdout, done.stdout + done.stderr

    # A restart of the service keeps the owners.
    t.service.stop()
    await t.start_service("serving-2").wait_ready()
    app = await t.deployed("web")
    assert app["owner"] == "team-a"
    assert (await t.call("team-b", "DELETE", "/v1/apps/web"))[0] == 403
    status, answer = await t.call("team-a", "DELETE", "/v1/apps/web")
    assert status == 200, answer


async def test_the_master_checks_the_owner_again_at_launch(tenants: Tenants) -> None:
    """Whatever the service says, the master refuses a launch for an owner the service may
    not launch for, and what the owner is not granted."""
    serving = sdk_tls.TLS.from_dir(tenants.pki / "serving")
    master = tenants.cluster.master

    async def subscribe(owner: str, **fields: Any) -> str:
        info = sdk.FrameworkInfo(
            name="serving:probe", on_behalf_of=sdk.Principal(name=owner), **fields
        )
        try:
            async with sdk.Driver(sdk.Scheduler(), info, master, tls=serving, connect_timeout=10):
                pass
        except (sdk.FrameworkError, sdk.CallError, sdk.ConnectError) as err:
            return str(err)
        return ""

    assert "principal serving may not launch for ops" in await subscribe("ops", role="web")
    assert "principal team-a may not register a framework in role batch" in await subscribe(
        "team-a", role="batch"
    )
    assert await subscribe("team-a", role="web") == ""
    assert any("launch for ops" in m for m in await tenants.denied("serving"))
