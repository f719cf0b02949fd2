"""Roles' weights and quotas on a real master: the master's flags, the CLI, HTTP and gRPC;
bad input is refused with its reason and changes nothing."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import grpc
import pytest

from corral.frameworks import sdk
from corral.frameworks.sdk.testing import LocalCluster
from corral.v1 import common_pb2, operator_pb2, operator_pb2_grpc
from tests.integration.corral_cli import corral
from tests.master_http import master_session

pytestmark = pytest.mark.e2e


async def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(corral, *args)


class Recorder(sdk.Scheduler):
    """Keeps its offers (declined for an hour) so a test can read what it was offered."""

    def __init__(self) -> None:
        self.seen: list[sdk.Offer] = []
        self.offered = asyncio.Event()

    async def offers(self, driver: sdk.Driver, offers: list[sdk.Offer]) -> None:
        self.seen.extend(offers)
        await driver.decline([o.id for o in offers], refuse_seconds=3600)
        self.offered.set()


async def roles_over_cli(master: str) -> dict[str, Any]:
    got = await cli("get", "roles", "-o", "json", "--master", master)
    assert got.returncode == 0, got.stderr
    return {r["role"]: r for r in json.loads(got.stdout)}


async def test_weights_and_quotas_through_flags_cli_and_http(tmp_path: Path) -> None:
    quotas = tmp_path / "quotas.json"
    quotas.write_text(json.dumps({"batch": {"guarantee": "cpus:1;mem:128"}}))
    async with LocalCluster(
        agents=1,
        agent_resources="cpus:4;mem:1024;disk:100",
        work_dir=tmp_path,
        master_args=(
            *("--allocation-interval", "0.2"),
            *("--weights", "web=3,batch=1"),
            *("--quotas", str(quotas)),
        ),
    ) as cluster:
        master, base = cluster.master, f"{cluster.base_url}"

        # The flags' values, through the CLI.
        roles = await roles_over_cli(master)
        assert roles["web"]["weight"] == 3 and roles["web"]["quota"] == {
            "guarantee": {},
            "limit": {},
        }
        assert roles["batch"]["quota"] == {"guarantee": {"cpus": 1, "mem": 128}, "limit": {}}

        # Set through the CLI.
        done = await cli("set", "weight", "batch", "2", "--master", master)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "role batch: weight 2"
        done = await cli(
            *("set", "quota", "web", "--guarantee", "cpus:1;mem:256", "--limit", "cpus:2"),
            *("--master", master),
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "role web: quota guarantee cpus:1;mem:256, limit cpus:2"
        roles = await roles_over_cli(master)
        assert roles["batch"]["weight"] == 2
        assert roles["web"]["quota"] == {
            "guarantee": {"cpus": 1, "mem": 256},
            "limit": {"cpus": 2},
        }

        # Bad input through the CLI: usage errors exit 2 before the master is asked, the
        # master's refusal exits 1 with its reason; nothing changed.
        refused = await cli(
            *("set", "quota", "web", "--guarantee", "cpus:4", "--limit", "cpus:2"),
            *("--master", master),
        )
        assert refused.returncode == 1
        assert refused.stderr.strip() == (
            f"corral set: master at {master}: quota of role 'web': "
            "the limit of cpus (2) is below its guarantee (4)"
        )
        for args, reason in [
            (("weight", "web", "nan"), "must be a positive number, got nan"),
            (("weight", "web", "-2"), "must be a positive number, got -2"),
            (("quota", "web", "--limit", "tpus:1"), "unknown resource 'tpus'"),
            (("quota", "web", "--guarantee", "cpus:-1"), "cpus is negative"),
            (("quota", "web"), "give --guarantee and/or --limit, or --clear"),
            (("quota", "web", "--clear", "--limit", "cpus:1"), "or --clear (alone)"),
        ]:
            bad = await cli("set", *args, "--master", master)
            assert bad.returncode == 2, (args, bad.stderr)
            assert reason in bad.stderr.splitlines()[-1], (args, bad.stderr)
        assert await roles_over_cli(master) == roles

        # A framework in role web is offered at most its limit (cpus:2 of the agent's 4), and
        # shows in the role's view.
        scheduler = Recorder()
        async with sdk.Driver(scheduler, sdk.FrameworkInfo(name="w", role="web"), master) as d:
            await asyncio.wait_for(scheduler.offered.wait(), 20)
            assert scheduler.seen[0].resources.cpus == 2
            async with master_session(cluster) as http:
                async with http.get(f"{base}/api/v1/roles") as r:
                    assert r.status == 200
                    web = {x["role"]: x for x in (await r.json())["roles"]}["web"]
                assert web["frameworks"] == [d.framework_id]
                async with http.get(f"{base}/api/v1/state") as r:
                    state_roles = {x["role"]: x for x in (await r.json())["roles"]}
                assert state_roles["web"]["weight"] == 3

                # HTTP: set, refuse with a reason, clear.
                async with http.put(f"{base}/api/v1/roles/web/weight", json={"weight": 5}) as r:
                    assert r.status == 200, await r.text()
                    assert await r.json() == {"role": "web", "weight": 5}
                before = (await (await http.get(f"{base}/api/v1/roles")).json())["roles"]
                for path, body, reason in [
                    ("web/weight", '{"weight": NaN}', "is NaN"),
                    ("web/weight", '{"weight": -1}', "is negative"),
                    ("web/weight", '{"weight": "2"}', 'weight must be a number, got "2"'),
                    ("web/weight", "{not json", "the body is not JSON"),
                    ("web/weight", '{"weight": 1, "x": 2}', 'the body must be {"weight": NUMBER}'),
                    ("we%20b/weight", '{"weight": 1}', "contains ' '"),
                    ("web/quota", '{"guarantee": "tpus:1"}', "unknown resource 'tpus'"),
                    ("web/quota", '{"guarantee": {"cpus": NaN}}', "cpus is NaN"),
                    ("web/quota", '{"limit": {"mem": -5}}', "mem is negative"),
                    (
                        "web/quota",
                        '{"guarantee": "cpus:3", "limit": "cpus:1"}',
                        "the limit of cpus (1) is below its guarantee (3)",
                    ),
                    ("web/quota", "[]", "must be an object"),
                ]:
                    async with http.put(f"{base}/api/v1/roles/{path}", data=body) as r:
                        assert r.status == 400, (path, body, await r.text())
                        assert reason in (await r.json())["error"], (path, body)
                after = (await (await http.get(f"{base}/api/v1/roles")).json())["roles"]
                assert after == before
                quota = {"guarantee": {"cpus": 1}, "limit": "cpus:3;gpus:0"}
                async with http.put(f"{base}/api/v1/roles/web/quota", json=quota) as r:
                    assert r.status == 200, await r.text()
                    assert await r.json() == {
                        "role": "web",
                        "quota": {"guarantee": {"cpus": 1}, "limit": {"cpus": 3, "gpus": 0}},
                    }
                async with http.delete(f"{base}/api/v1/roles/web/quota") as r:
                    assert r.status == 200, await r.text()
                async with http.get(f"{base}/api/v1/events") as r:
                    kinds = [(e["kind"], e["subject"]) for e in await r.json()]
                assert ("role_weight_set", "web") in kinds
                assert ("role_quota_set", "web") in kinds

        roles = await roles_over_cli(master)
        assert roles["web"]["weight"] == 5
        assert roles["web"]["quota"] == {"guarantee": {}, "limit": {}}
        table = await cli("get", "roles", "--master", master)
        assert table.returncode == 0, table.stderr
        assert "WEIGHT" in table.stdout and "batch" in table.stdout


async def test_operator_grpc_refuses_bad_input_with_a_reason(tmp_path: Path) -> None:
    async with (
        LocalCluster(agents=0, work_dir=tmp_path) as cluster,
        cluster.channel() as channel,
    ):
        stub = operator_pb2_grpc.OperatorStub(channel)  # type: ignore[no-untyped-call]
        bad: list[tuple[str, Any, str]] = [
            ("SetWeight", operator_pb2.SetWeightRequest(role="a", weight=0), "more than 0"),
            ("SetWeight", operator_pb2.SetWeightRequest(weight=1), "the role is empty"),
            (
                "SetQuota",
                operator_pb2.SetQuotaRequest(
                    role="a",
                    quota=operator_pb2.Quota(
                        guarantee=common_pb2.Resources(
                            cpus=1, ports=[common_pb2.Range(begin=1, end=2)]
                        )
                    ),
                ),
                "ports are not part of a quota",
            ),
            (
                "SetQuota",
                operator_pb2.SetQuotaRequest(
                    role="a",
                    quota=operator_pb2.Quota(guarantee=common_pb2.Resources(mem=float("nan"))),
                ),
                "the guarantee of mem is NaN",
            ),
        ]
        for method, request, reason in bad:
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await getattr(stub, method)(request, timeout=5)
            assert info.value.code() is grpc.StatusCode.INVALID_ARGUMENT, method
            assert reason in (info.value.details() or ""), (method, info.value.details())
        roles = await stub.GetRoles(operator_pb2.GetRolesRequest(), timeout=5)
        assert list(roles.roles) == []
        quota = operator_pb2.Quota(limit=operator_pb2.ResourceLimits(gpus=0))
        await stub.SetQuota(operator_pb2.SetQuotaRequest(role="a", quota=quota), timeout=5)
        roles = await stub.GetRoles(operator_pb2.GetRolesRequest(), timeout=5)
        [role] = roles.roles
        assert role.role == "a" and role.weight == 1
        assert role.quota.limit.HasField("gpus") and not role.quota.limit.HasField("cpus")


@pytest.mark.parametrize(
    ("flag", "content", "reason"),
    [
        ("--quotas", "{not json", "--quotas {file}: the file is not JSON: Expecting property name"),
        ("--quotas", '{"web": {"limit": "cpus:-1"}}', "cpus is negative (-1)"),
        ("--quotas", '{"web": {"guarantee": "cpus:2", "limit": "cpus:1"}}', "is below"),
        ("--quotas", None, "--quotas: cannot read {file}"),
        ("--weights", "web=0", "--weights: the weight of role 'web' must be more than 0"),
        ("--weights", "web", "--weights: 'web' is not role=weight"),
    ],
)
def test_bad_role_flags_stop_the_master_with_one_line(
    tmp_path: Path, flag: str, content: str | None, reason: str
) -> None:
    file = tmp_path / "quotas.json"
    if flag == "--quotas":
        if content is not None:
            file.write_text(content)
        value = str(file)
    else:
        value = content or ""
    got = corral("master", "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", flag, value)
    assert got.returncode == 2
    [line] = got.stderr.splitlines()
    assert line.startswith("corral master: ") and reason.format(file=file) in line, line
