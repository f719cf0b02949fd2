"""What services publish to the master for its web UI (Operator.PublishStatus, docs/ui.md
"Services"), on real processes: `corral autoscaler` publishes its node groups and `corral jobs
serve` its queues to a real master over mutual TLS; the master's HTTP API reads them back with
their publisher and age; a stopped service's status turns stale. With an ACL file: a principal
without the grant is refused (and a Denied event names it), another principal may not replace a
fresh status, and bad documents are refused with their reason, over gRPC and HTTP."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import grpc
import pytest

from corral.frameworks.sdk import tls as sdk_tls
from corral.frameworks.sdk.testing import LocalCluster
from corral.v1 import operator_pb2, operator_pb2_grpc
from tests.integration.corral_cli import corral
from tests.integration.job_service import JobsProcess
from tests.integration.serving_service import until_async
from tests.integration.test_autoscaler import FAST, Autoscaler, _issue, config_file, group
from tests.master_http import master_session

pytestmark = pytest.mark.e2e


async def statuses(cluster: LocalCluster, kind: str = "") -> list[dict[str, Any]]:
    async with master_session(cluster) as http:
        url = f"{cluster.base_url}/api/v1/services/status" + (f"?kind={kind}" if kind else "")
        async with http.get(url) as r:
            assert r.status == 200, await r.text()
            return list((await r.json())["statuses"])


QUEUES = {
    "cluster_queues": [
        {"name": "team-a", "cohort": "ml", "resources": {"default": {"cpus": 4}}},
        {"name": "team-b", "cohort": "ml", "resources": {"default": {"cpus": 2}}},
    ]
}
# A job bigger than its queue and the cohort: it stays pending, and says why.
TOO_BIG = {
    "name": "too-big",
    "queue": "team-b",
    "stages": [{"name": "s", "tasks": 8, "cpus": 1, "mem": 32, "command": "true"}],
}


async def start_services(tmp_path: Path, cluster: LocalCluster) -> tuple[Autoscaler, JobsProcess]:
    """A real autoscaler with two node groups and a real job service with two queues of a
    cohort and one job pending in team-b, both against ``cluster``'s master."""
    config = config_file(
        tmp_path / "as.json",
        [
            group("small", "cpus:2;mem:1024", 5),
            group("gpu", "cpus:8;mem:8192;gpus:2", 2, template={"attributes": {"zone": "b"}}),
        ],
    )
    a = await Autoscaler(
        tmp_path / "as-state", cluster.master, tmp_path / "as.log", "--config", str(config)
    ).wait_ready()
    queues = tmp_path / "queues.json"
    queues.write_text(json.dumps(QUEUES))
    jobs = JobsProcess(
        tmp_path / "jobs-state", cluster.master, tmp_path / "jobs.log", "--queues", str(queues)
    )
    try:
        await jobs.wait_ready()
        await jobs.ok("POST", "/v1/jobs", TOO_BIG)
    except BaseException:
        a.stop()
        jobs.stop()
        raise
    return a, jobs


async def test_the_autoscaler_and_the_job_service_publish_their_status_to_the_master(
    tmp_path: Path,
) -> None:
    async with LocalCluster(agents=0, work_dir=tmp_path / "cluster", master_args=FAST) as cluster:
        a, jobs = await start_services(tmp_path, cluster)
        try:

            async def both() -> dict[str, dict[str, Any]] | None:
                got = {s["kind"]: s for s in await statuses(cluster)}
                pending = got.get("queues", {}).get("document", {}).get("pending", [])
                return got if "nodegroups" in got and pending else None

            got = await until_async(
                both, 60, "both services' statuses on the master", lambda: a.logs() + jobs.logs()
            )
            groups = got["nodegroups"]
            assert (groups["service"], groups["stale"]) == ("autoscaler", False)
            assert groups["principal"]  # the autoscaler's certificate's name
            by_name = {g["name"]: g for g in groups["document"]["node_groups"]}
            assert set(by_name) == {"small", "gpu"}
            assert (by_name["gpu"]["max"], by_name["gpu"]["template"]["attributes"]) == (
                2,
                {"zone": "b"},
            )
            q = got["queues"]
            assert q["service"] == "jobs"
            rows = {r["cluster_queue"]: r for r in q["document"]["queues"]}
            assert rows["team-a"]["nominal"] == {"cpus": 4} and rows["team-b"]["cohort"] == "ml"
            (waiting,) = q["document"]["pending"]
            assert (waiting["name"], waiting["cluster_queue"]) == ("too-big", "team-b")
            assert "team-b" in waiting["reason"] and "cpus" in waiting["reason"]
            assert [s["kind"] for s in await statuses(cluster, "queues")] == ["queues"]
            # The same from the CLI, as an operator lists them.
            listed = await asyncio.to_thread(
                corral, "get", "services", "-o", "json", "--master", cluster.master
            )
            assert listed.returncode == 0, listed.stderr
            by_kind = {r["kind"]: r for r in json.loads(listed.stdout)}
            assert by_kind["nodegroups"]["document"]["node_groups"][0]["name"] == "small"
            assert by_kind["queues"]["service"] == "jobs" and not by_kind["queues"]["stale"]
            table = await asyncio.to_thread(corral, "get", "services", "--master", cluster.master)
            assert table.returncode == 0, table.stderr
            lines = [x for x in table.stdout.splitlines() if x.split()[:1] == ["nodegroups"]]
            assert len(lines) == 1, table.stdout
            line = lines[0]
            assert line.split()[1] == "autoscaler" and line.split()[-2:] == ["fresh", "2"]

            # The autoscaler stops: its status stays, and turns stale after its ttl.
            a.stop()

            async def stale() -> bool:
                return bool((await statuses(cluster, "nodegroups"))[0]["stale"])

            await until_async(stale, 30, "the stopped autoscaler's status to be stale", a.logs)
            assert not (await statuses(cluster, "queues"))[0]["stale"]
        finally:
            a.stop()
            jobs.stop()


ACLS = {
    "version": "status-1",
    "rules": [
        {"name": "ops", "cert_roles": ["operator"], "operator": ["*"]},
        {"name": "autoscaler", "principals": ["autoscaler"], "operator": ["PublishStatus"]},
        {"name": "reader", "principals": ["bob"], "operator": ["read"]},
        {"name": "other", "principals": ["carol"], "operator": ["PublishStatus"]},
    ],
}


def request(document: Any, service: str = "autoscaler") -> operator_pb2.PublishStatusRequest:
    text = document if isinstance(document, str) else json.dumps(document)
    return operator_pb2.PublishStatusRequest(
        service=service, kind="nodegroups", document_json=text, ttl_seconds=60
    )


async def publish(tls: sdk_tls.TLS, cluster: LocalCluster, req: Any) -> grpc.StatusCode:
    async with sdk_tls.aio_channel(cluster.master, tls) as ch:
        stub = operator_pb2_grpc.OperatorStub(ch)  # type: ignore[no-untyped-call]
        try:
            await stub.PublishStatus(req, timeout=10)
        except grpc.aio.AioRpcError as err:
            return err.code()  # type: ignore[no-any-return]
    return grpc.StatusCode.OK


async def test_publishing_needs_its_grant_and_a_fresh_status_is_its_publishers(
    tmp_path: Path,
) -> None:
    acls = tmp_path / "acls.json"
    acls.write_text(json.dumps(ACLS))
    async with LocalCluster(
        agents=0, work_dir=tmp_path / "cluster", master_args=(*FAST, "--acls", str(acls))
    ) as cluster:
        autoscaler, bob, carol = (_issue(tmp_path, n) for n in ("autoscaler", "bob", "carol"))
        good = {"node_groups": [{"name": "small", "min": 0, "max": 3}]}
        assert await publish(autoscaler, cluster, request(good)) == grpc.StatusCode.OK
        # bob may read, not publish: refused and recorded as a Denied event naming him.
        assert await publish(bob, cluster, request(good)) == grpc.StatusCode.PERMISSION_DENIED
        # carol may publish, but not over the autoscaler's fresh status.
        assert await publish(carol, cluster, request(good)) == grpc.StatusCode.PERMISSION_DENIED
        assert await publish(carol, cluster, request(good, "other")) == grpc.StatusCode.OK
        # Bad documents: INVALID_ARGUMENT, and the kept one is unchanged.
        for bad in ("{", {"node_groups": [{"min": 1}]}, {"groups": []}):
            code = await publish(autoscaler, cluster, request(bad))
            assert code == grpc.StatusCode.INVALID_ARGUMENT, bad
        kept = {s["service"]: s for s in await statuses(cluster, "nodegroups")}
        assert kept["autoscaler"]["principal"] == "autoscaler"
        assert kept["autoscaler"]["document"] == good
        assert kept["other"]["principal"] == "carol"
        async with master_session(cluster) as http:
            events = f"{cluster.base_url}/api/v1/events?reason=Denied"
            async with http.get(events) as r:
                denied = [e for e in await r.json() if "PublishStatus" in e["message"]]
            assert any("bob" in e["message"] for e in denied), denied
            # Over HTTP, as the operator: a bad body and an unknown kind are 400s with the
            # reason; a good one is kept.
            base = f"{cluster.base_url}/api/v1/services"
            async with http.put(f"{base}/ops/status/nodegroups", json={"doc": 1}) as r:
                assert r.status == 400 and "document" in (await r.json())["error"]
            async with http.put(f"{base}/ops/status/pods", json={"document": good}) as r:
                assert r.status == 400 and "kind 'pods'" in (await r.json())["error"]
            async with http.get(f"{base}/status?kind=pods") as r:
                assert r.status == 400
            async with http.put(
                f"{base}/ops/status/nodegroups", json={"document": good, "ttl_seconds": 5}
            ) as r:
                assert r.status == 200, await r.text()
        names = {s["service"] for s in await statuses(cluster, "nodegroups")}
        assert names == {"autoscaler", "other", "ops"}
