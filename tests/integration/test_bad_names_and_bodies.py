"""HTTP and naming edge cases on a real master (issue #30, item 10): a JSON body nested deeper
than Corral reads is a 400 on every endpoint that reads one, not a 500, on the master and the
serving service alike (issue #40); a role name Mesos
refuses (``..``, ``.``, empty or dot components, a leading ``-``, control characters) is refused
with its reason at every entry: HTTP 400, gRPC INVALID_ARGUMENT, CLI exit 2. Nothing changes,
and the master serves on."""

from __future__ import annotations

import asyncio
import io
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import grpc
import pytest

from corral.frameworks.sdk.testing import LocalCluster
from corral.v1 import agent_pb2, agent_pb2_grpc, operator_pb2, operator_pb2_grpc, scheduler_pb2_grpc
from corral.v1 import common_pb2 as pb
from corral.v1 import scheduler_pb2 as s
from tests.integration.corral_cli import corral
from tests.integration.serving_service import ServingProcess
from tests.master_http import local_session, master_session

pytestmark = pytest.mark.e2e

# (as the HTTP path writes it, as the master reads it, what its refusal says)
BAD_ROLES = [
    ("..", "..", "'..' as a component"),
    ("%2E", ".", "'.' as a component"),
    ("a%2F..%2Fb", "a/../b", "'..' as a component"),
    ("%2Fa", "/a", "empty component"),
    ("a%2F%2Fb", "a//b", "empty component"),
    ("-a", "-a", "starting with '-'"),
    ("%2A%2Fa", "*/a", "'*' is the default role, alone"),
    ("a%01b", "a\x01b", "contains '\\x01'"),
    ("a%0Ab", "a\nb", "contains '\\n'"),
]


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    async with LocalCluster(agents=0, work_dir=tmp_path / "cluster") as c:
        yield c


async def _roles(http: aiohttp.ClientSession, base: str) -> Any:
    async with http.get(f"{base}/api/v1/roles") as r:
        return (await r.json())["roles"]


# Bodies every Corral HTTP API refuses alike (issue #40: one reader, corral.frameworks.sdk.
# json_input): (what, body, status, the reason's words).
BAD_BODIES = [
    ("unclosed, past Python's recursion limit", "[" * 100_000, 400, "nested more than 32 deep"),
    (
        "closed, past Python's recursion limit",
        "[" * 100_000 + "]" * 100_000,
        400,
        "nested more than 32 deep",
    ),
    ("33 objects deep", '{"weight": ' * 33 + "1" + "}" * 33, 400, "nested more than 32 deep"),
    ("larger than 1 MiB", "[" + "1," * (1 << 19) + "1]", 413, "larger than 1048576 bytes"),
]
# Every endpoint of the master's HTTP API that reads a JSON body.
MASTER_JSON_ENDPOINTS = [
    ("PUT", "roles/web/weight"),
    ("PUT", "roles/web/quota"),
    ("PUT", "priorityclasses/gold"),
    ("POST", "tasks/kill"),
    ("POST", "frameworks/nosuch/teardown"),
    ("POST", "agents/nosuch/cordon"),
    ("POST", "agents/nosuch/uncordon"),
    ("POST", "agents/nosuch/drain"),
]


async def _refuses_alike(http: aiohttp.ClientSession, method: str, url: str) -> None:
    for what, body, status, words in BAD_BODIES:
        # A stream, not bytes: aiohttp warns that a large bytes body blocks its loop.
        async with http.request(method, url, data=io.BytesIO(body.encode())) as r:
            assert r.status == status, (url, what, r.status, await r.text())
            reason = (await r.json())["error"]
            assert f"the body is {'JSON ' if status == 400 else ''}{words}" in reason, (
                url,
                what,
                reason,
            )


async def test_a_deeply_nested_body_is_a_400_on_every_endpoint_that_reads_json(
    cluster: LocalCluster,
) -> None:
    base = cluster.base_url
    async with master_session(cluster) as http:
        before = await _roles(http, base)
        for method, path in MASTER_JSON_ENDPOINTS:
            await _refuses_alike(http, method, f"{base}/api/v1/{path}")
        assert await _roles(http, base) == before
        async with http.get(f"{base}/api/v1/priorityclasses") as r:
            assert "gold" not in await r.text()
        async with http.get(f"{base}/health") as r:
            assert r.status == 200


async def test_the_serving_service_refuses_bad_bodies_as_the_master_does(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    """Issue #40: the serving service answered 500 to a deeply nested body (RecursionError in
    its log) where the master answered 400; both read bodies with the one reader now."""
    service = await ServingProcess(
        tmp_path / "state", cluster.master, tmp_path / "serving.log"
    ).wait_ready()
    try:
        async with local_session() as http:
            for method, path in [
                ("PUT", "/v1/apps/web"),
                ("PUT", "/v1/apps/web/scale"),
                ("POST", "/v1/apps/web/rollback"),
            ]:
                await _refuses_alike(http, method, service.url + path)
        assert (await service.ok("GET", "/v1/apps"))["apps"] == []
        assert (await service.ok("GET", "/v1/health"))["ok"] is True
        logs = service.logs()
        assert "RecursionError" not in logs and "request failed" not in logs, logs
    finally:
        service.stop()


async def test_bad_role_names_are_a_400_over_http(cluster: LocalCluster) -> None:
    base = cluster.base_url
    async with master_session(cluster) as http:
        before = await _roles(http, base)
        for written, _read, reason in BAD_ROLES:
            for method, path, body in [
                ("PUT", "weight", '{"weight": 2}'),
                ("PUT", "quota", '{"limit": "cpus:1"}'),
                ("DELETE", "quota", None),
            ]:
                # The path as written: no client-side normalisation of '..'.
                url = aiohttp.client.URL(f"{base}/api/v1/roles/{written}/{path}", encoded=True)
                async with http.request(method, url, data=body) as r:
                    assert r.status == 400, (written, method, path, r.status, await r.text())
                    assert reason in (await r.json())["error"], (written, method, path)
        assert await _roles(http, base) == before


async def test_bad_role_names_are_invalid_argument_over_grpc(cluster: LocalCluster) -> None:
    async with cluster.channel() as channel:
        operator = operator_pb2_grpc.OperatorStub(channel)  # type: ignore[no-untyped-call]
        scheduler = scheduler_pb2_grpc.SchedulerStub(channel)  # type: ignore[no-untyped-call]
        agents = agent_pb2_grpc.AgentServiceStub(channel)  # type: ignore[no-untyped-call]
        for _written, role, reason in BAD_ROLES:
            calls: list[tuple[str, Any]] = [
                (
                    "SetWeight",
                    operator.SetWeight(
                        operator_pb2.SetWeightRequest(role=role, weight=2), timeout=10
                    ),
                ),
                (
                    "SetQuota",
                    operator.SetQuota(
                        operator_pb2.SetQuotaRequest(
                            role=role,
                            quota=operator_pb2.Quota(limit=operator_pb2.ResourceLimits(cpus=1)),
                        ),
                        timeout=10,
                    ),
                ),
                (
                    "Subscribe",
                    scheduler.Subscribe(
                        s.SubscribeRequest(framework_info=pb.FrameworkInfo(name="n", role=role)),
                        timeout=10,
                    ).read(),
                ),
            ]
            connect = agents.Connect(timeout=10)
            info = pb.AgentInfo(
                hostname="h",
                resources=pb.Resources(cpus=2, mem=512),
                reservations={role: pb.Resources(cpus=1)},
            )
            await connect.write(agent_pb2.AgentMessage(register=agent_pb2.Register(info=info)))
            calls.append(("Connect", connect.read()))
            for name, call in calls:
                with pytest.raises(grpc.aio.AioRpcError) as refused:
                    await call
                assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT, (name, role)
                assert reason in (refused.value.details() or ""), (name, role)
        state = await operator.GetState(operator_pb2.GetStateRequest(), timeout=10)
        assert list(state.agents) == [] and list(state.frameworks) == []
        roles = await operator.GetRoles(operator_pb2.GetRolesRequest(), timeout=10)
        assert list(roles.roles) == []


async def test_bad_role_names_are_exit_2_on_the_command_line(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    quotas = tmp_path / "quotas.json"
    quotas.write_text('{"a/../b": {"limit": "cpus:1"}}')
    runs: list[tuple[str, ...]] = [
        ("set", "weight", "..", "2", "--master", cluster.master),
        ("set", "weight", "a/../b", "2", "--master", cluster.master),
        ("set", "quota", "a//b", "--limit", "cpus:1", "--master", cluster.master),
        ("run", "hello", "--role", "..", "--master", cluster.master),
        ("master", "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", "--weights", "..=2"),
        ("master", "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", "--quotas", str(quotas)),
    ]
    results: list[subprocess.CompletedProcess[str]] = await asyncio.gather(
        *(asyncio.to_thread(corral, *args) for args in runs)
    )
    for args, got in zip(runs, results, strict=True):
        assert got.returncode == 2, (args, got.stdout, got.stderr)
        assert "Traceback" not in got.stderr
        last = got.stderr.strip().splitlines()[-1]  # after argparse's usage, if any: the reason
        assert "as a component" in last or "empty component" in last, (args, got.stderr)
