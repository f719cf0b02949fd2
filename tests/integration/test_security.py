"""Issue #33's attacks on a real master with real certificates, each refused (a failed
handshake, PERMISSION_DENIED, HTTP 401/403), and the legitimate path beside it working.

The cluster: `corral certs init` makes a CA; `corral certs issue` certificates for an
operator, two framework principals (the inference team, granted the GPU pool and the
prod-inference class; a batch team, granted neither) and agents; the master runs with
--tls-dir and an --acls file written the way docs/security.md shows.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import grpc
import grpc.aio
import pytest

from corral.frameworks import sdk
from corral.frameworks.sdk import tls as sdk_tls
from corral.frameworks.sdk.testing import LocalCluster
from corral.v1 import agent_pb2, agent_pb2_grpc, common_pb2, operator_pb2, operator_pb2_grpc
from tests.integration.recording import WAIT

pytestmark = pytest.mark.e2e

CORRAL = (sys.executable, "-m", "corral.cli.main")
GPU_TAINT = "gpu-sku=inference:NoSchedule"
SECRET = "s3cr3t-value-that-must-not-leak"

ACLS = """
version: "1"
rules:
  - name: operators
    cert_roles: [operator]
    operator: ["*"]
  - name: inference-team
    principals: [inference]
    frameworks:
      roles: [inference]
      priority_classes: [prod-inference, default]
      tolerations: ["gpu-sku=inference:NoSchedule"]
      max_resources: {gpus: 1}
    operator: [read]
  - name: batch-team
    principals: [batch]
    frameworks:
      roles: [batch]
      priority_classes: [batch]
  - name: observers
    principals: [observer]
    operator: [read]
  - name: nodes
    principals: [node-*]
    cert_roles: [agent]
    agents:
      attributes: {zone: ["*"]}
      max_resources: "cpus:64;mem:262144;disk:1000000"
  - name: gpu-nodes
    principals: [gpu-node-*]
    cert_roles: [agent]
    agents:
      attributes: {zone: ["*"], gpu-sku: [inference]}
      max_resources: "cpus:64;mem:262144;disk:1000000;gpus:8"
  - name: edge-nodes
    principals: [edge-*]
    cert_roles: [agent]
    agents:
      hostnames: ["{principal}", "{principal}.edge.example.com"]
      max_resources: "cpus:64;mem:262144;disk:1000000"
"""


def corral(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CORRAL, *args], capture_output=True, text=True, timeout=120, check=False
    )


def make_pki(root: Path) -> Path:
    pki = root / "pki"
    done = corral("certs", "init", "--dir", str(pki))
    assert done.returncode == 0, done.stderr
    for name, role in (
        ("ops", "operator"),
        ("inference", "framework"),
        ("batch", "framework"),
        ("observer", "framework"),
        ("node-1", "agent"),
        ("node-2", "agent"),
        ("gpu-node-1", "agent"),
        ("rogue", "agent"),
        ("edge-1", "agent"),
    ):
        done = corral("certs", "issue", name, "--role", role, "--dir", str(pki))
        assert done.returncode == 0, done.stderr
    return pki


def cred(pki: Path, name: str) -> sdk_tls.TLS:
    return sdk_tls.TLS.from_dir(pki / name)


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[tuple[LocalCluster, Path]]:
    pki = await asyncio.to_thread(make_pki, tmp_path)
    acls = tmp_path / "acls.yaml"
    acls.write_text(ACLS)
    classes = tmp_path / "classes.json"
    classes.write_text(json.dumps([{"name": "prod-inference", "value": 100_000}]))
    async with LocalCluster(
        agents=0,
        work_dir=tmp_path / "cluster",
        master_args=(
            *("--tls-dir", str(pki / "master"), "--acls", str(acls)),
            *("--priority-classes", str(classes)),
        ),
        tls=cred(pki, "ops"),
        agent_tls=cred(pki, "node-1"),
    ) as c:
        yield c, pki


def info(name: str, role: str, **kw: Any) -> sdk.FrameworkInfo:
    return sdk.FrameworkInfo(name=name, role=role, **kw)


async def denied(call: Any) -> str:
    """The message of a call that must be refused with PERMISSION_DENIED."""
    try:
        await call
    except grpc.aio.AioRpcError as exc:
        assert exc.code() == grpc.StatusCode.PERMISSION_DENIED, exc
        return exc.details() or ""
    except sdk.CallError as exc:
        assert exc.code == grpc.StatusCode.PERMISSION_DENIED, exc
        return exc.message
    raise AssertionError("the call was not refused")


async def events(cluster: LocalCluster, reason: str) -> list[operator_pb2.ClusterEvent]:
    async with cluster.channel() as ch:
        stub = operator_pb2_grpc.OperatorStub(ch)  # type: ignore[no-untyped-call]
        got = await stub.GetEvents(operator_pb2.GetEventsRequest(reason=reason), timeout=10)
    return list(got.events)


async def test_transport_needs_a_certificate_from_the_cluster_ca(
    cluster: tuple[LocalCluster, Path], tmp_path: Path
) -> None:
    c, pki = cluster
    other = tmp_path / "other-pki"
    assert corral("certs", "init", "--dir", str(other)).returncode == 0
    assert (
        corral("certs", "issue", "ops", "--role", "operator", "--dir", str(other)).returncode == 0
    )
    request = operator_pb2.GetStateRequest()
    # Plain text, another CA's certificate, and TLS with no client certificate: no handshake.
    no_cert = tmp_path / "no-cert"
    no_cert.mkdir()
    ca_only = grpc.ssl_channel_credentials(root_certificates=(pki / "ca.crt").read_bytes())
    channels = [
        grpc.aio.insecure_channel(c.master),
        sdk_tls.aio_channel(c.master, cred(other, "ops")),
        grpc.aio.secure_channel(
            c.master, ca_only, options=[("grpc.ssl_target_name_override", "master.corral")]
        ),
    ]
    for channel in channels:
        async with channel:
            stub = operator_pb2_grpc.OperatorStub(channel)  # type: ignore[no-untyped-call]
            with pytest.raises(grpc.aio.AioRpcError) as exc:
                await stub.GetState(request, timeout=5)
            assert exc.value.code() == grpc.StatusCode.UNAVAILABLE, exc.value
    # The CLI says so in one line, and why: --insecure does not talk to a TLS master, another
    # CA's certificate fails the handshake.
    for flags, why in (
        (("--insecure",), "a master started without --insecure speaks only TLS"),
        (("--tls-dir", str(other / "ops")), "the TLS handshake failed"),
    ):
        done = corral("get", "agents", "--master", c.master, "--timeout", "3", *flags)
        assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert why in done.stderr, done.stderr
    # HTTP: no certificate and no token is 401; a browser is sent to /login; the right
    # certificate is answered; a token from `corral token` works as a bearer.
    async with aiohttp.ClientSession() as http:
        plain = aiohttp.TCPConnector(ssl=False)
        async with aiohttp.ClientSession(connector=plain) as bare:
            async with bare.get(f"https://{c.http}/api/v1/state") as r:
                assert r.status == 401
            async with bare.get(f"https://{c.http}/", allow_redirects=False) as r:
                assert (r.status, r.headers["Location"]) == (303, "/login")
            async with bare.get(f"https://{c.http}/health") as r:
                assert r.status == 200  # liveness needs no credential
        with pytest.raises(aiohttp.ClientError):
            await http.get(f"http://{c.http}/api/v1/state")  # plain HTTP is not answered
    ssl = cred(pki, "ops").ssl_context()
    async with (
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ssl)) as http,
        http.get(f"https://{c.http}/api/v1/state") as r,
    ):
        assert r.status == 200
        assert (await r.json())["acls"]["version"] == "1"
    token = corral("token", "--master", c.master, "--tls-dir", str(pki / "ops"), "-o", "json")
    assert token.returncode == 0, token.stderr
    bearer = {"Authorization": "Bearer " + json.loads(token.stdout)["token"]}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=False)) as http:
        async with http.get(f"https://{c.http}/api/v1/roles", headers=bearer) as r:
            assert r.status == 200, await r.text()
        forged = {"Authorization": bearer["Authorization"][:-4] + "AAAA"}
        async with http.get(f"https://{c.http}/api/v1/roles", headers=forged) as r:
            assert r.status == 401


async def test_priority_classes_and_the_gpu_pool_are_for_those_granted(
    cluster: tuple[LocalCluster, Path],
) -> None:
    c, pki = cluster
    c.agent_tls = cred(pki, "gpu-node-1")  # granted the GPU pool's label
    await c.add_agent(
        "gpu-node-1",
        "cpus:4;mem:4096;disk:1000;gpus:2",
        attributes={"zone": "a", "gpu-sku": "inference"},
    )
    await c.wait_for_agents(1, WAIT)
    batch, inference = cred(pki, "batch"), cred(pki, "inference")
    gpu_toleration = sdk.Toleration.equal("gpu-sku", "inference", "NoSchedule")
    # An ungranted framework may not tolerate the GPU pool's taint, at subscription ...
    tolerating = info("b", "batch", tolerations=[gpu_toleration.to_pb()])
    message = await denied(sdk.Driver(None, tolerating, c.master, tls=batch).__aenter__())
    assert f"may not tolerate {GPU_TAINT}" in message
    # ... nor register in another team's role, nor call itself someone else.
    await denied(sdk.Driver(None, info("b", "inference"), c.master, tls=batch).__aenter__())
    impostor = info("b", "batch", principal="inference")
    message = await denied(sdk.Driver(None, impostor, c.master, tls=batch).__aenter__())
    assert "is not its certificate's 'batch'" in message
    async with sdk.Driver(None, info("b", "batch"), c.master, tls=batch) as driver:
        # ... nor name the system class, or tolerate the taint, in its demands.
        system = sdk.Demand("d", 1, cpus=1, mem=64, priority_class="system")
        message = await denied(driver.set_demands([system]))
        assert "may not use priority class system" in message
        assert "no rule grants it (deny by default)" in message
        gpu = sdk.Demand("g", 1, cpus=1, mem=64, gpus=1, tolerations=[gpu_toleration])
        await denied(driver.set_demands([gpu]))
        await driver.set_demands([sdk.Demand("ok", 1, cpus=1, mem=64, priority_class="batch")])
        # It is never offered the tainted GPU agent.
        await c.wait_for_cycles(3, WAIT)
        async with c.channel() as ch:
            explain = await operator_pb2_grpc.OperatorStub(ch).Explain(  # type: ignore[no-untyped-call]
                operator_pb2.ExplainRequest(framework_id=driver.framework_id), timeout=10
            )
        assert explain.offered_agents == 0
    # The granted framework may do all of it, and is offered the GPU agent.
    granted = info(
        "i",
        "inference",
        tolerations=[gpu_toleration.to_pb()],
        capabilities=[sdk.FrameworkCapability.FRAMEWORK_CAPABILITY_GPU_RESOURCES],
    )
    async with sdk.Driver(None, granted, c.master, tls=inference) as driver:
        await driver.set_demands(
            [sdk.Demand("serve", 1, cpus=1, mem=64, gpus=1, priority_class="prod-inference")]
        )
        offers = await _first_offers(driver)
        assert offers[0].attributes["gpu-sku"] == "inference"
        # Its principal may hold one GPU at once: a second task beyond the cap is refused.
        two = [
            sdk.task(f"t{i}", "sleep 30", cpus=0.5, mem=32, gpus=1, priority_class="")
            for i in range(2)
        ]
        message = await denied(driver.launch(offers[:1], two))
        assert "rule 'inference-team'" in message and "gpus 2 would exceed the cap of 1" in message
    # Every refusal is in the audit trail, and counted.
    audit = await events(c, "Denied")
    assert {e.subject for e in audit} >= {"batch"}
    metrics = (await c.http_get("/metrics")).decode()
    assert 'corral_denied_total{action="use_priority_class"}' in metrics
    assert 'corral_denied_total{action="tolerate"}' in metrics


async def _first_offers(driver: sdk.Driver) -> list[sdk.Offer]:
    async with asyncio.timeout(WAIT):
        async for event in driver.events():
            if isinstance(event, sdk.OffersEvent) and event.offers:
                return list(event.offers)
    raise AssertionError("no offers")


async def test_operator_endpoints_are_granted_one_by_one(
    cluster: tuple[LocalCluster, Path],
) -> None:
    c, pki = cluster
    weight = operator_pb2.SetWeightRequest(role="batch", weight=5)
    quota = operator_pb2.SetQuotaRequest(role="inference", quota=operator_pb2.Quota())
    lowest = operator_pb2.SetPriorityClassRequest(
        priority_class=common_pb2.PriorityClass(name="system", value=-1, global_default=True)
    )
    async with sdk_tls.aio_channel(c.master, cred(pki, "batch")) as ch:
        stub = operator_pb2_grpc.OperatorStub(ch)  # type: ignore[no-untyped-call]
        for call in (
            stub.SetWeight(weight, timeout=10),
            stub.SetQuota(quota, timeout=10),
            stub.SetPriorityClass(lowest, timeout=10),
            stub.GetState(operator_pb2.GetStateRequest(), timeout=10),  # other tenants' state
        ):
            message = await denied(call)
            assert "principal batch may not call" in message
    async with sdk_tls.aio_channel(c.master, cred(pki, "inference")) as ch:
        stub = operator_pb2_grpc.OperatorStub(ch)  # type: ignore[no-untyped-call]
        await stub.GetState(operator_pb2.GetStateRequest(), timeout=10)  # granted: read
        await denied(stub.SetWeight(weight, timeout=10))
    # The same refusal over HTTP, and the CLI's one line.
    ssl = cred(pki, "batch").ssl_context()
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ssl)) as http:
        url = f"https://{c.http}/api/v1/roles/batch/weight"
        async with http.put(url, json={"weight": 5}) as r:
            assert r.status == 403
            assert "may not call SetWeight" in (await r.json())["error"]
    done = corral(
        "set", "weight", "batch", "5", "--master", c.master, "--tls-dir", str(pki / "batch")
    )
    assert done.returncode == 1 and "may not call SetWeight" in done.stderr, done.stderr
    # The operator may.
    async with c.channel() as ch:
        stub = operator_pb2_grpc.OperatorStub(ch)  # type: ignore[no-untyped-call]
        await stub.SetWeight(weight, timeout=10)
        state = await stub.GetState(operator_pb2.GetStateRequest(), timeout=10)
    assert [r.weight for r in state.roles if r.role == "batch"] == [5]
    assert state.acls.version == "1" and "batch-team" in state.acls.rules
    listed = corral(
        *("events", "--reason", "Denied", "--master", c.master, "-o", "json"),
        *("--tls-dir", str(pki / "ops")),
    )
    assert listed.returncode == 0, listed.stderr
    messages = [e["message"] for e in json.loads(listed.stdout)]
    assert any("may not call SetWeight" in m for m in messages), messages


def _register(hostname: str, **info: Any) -> agent_pb2.AgentMessage:
    resources = info.pop("resources", common_pb2.Resources(cpus=4, mem=4096, disk=1000))
    return agent_pb2.AgentMessage(
        register=agent_pb2.Register(
            info=common_pb2.AgentInfo(hostname=hostname, resources=resources, **info)
        )
    )


async def _connect(
    c: LocalCluster, who: sdk_tls.TLS, first: agent_pb2.AgentMessage
) -> agent_pb2.MasterMessage:
    """An agent's stream opened with ``first``: the master's first answer, or its refusal."""
    async with sdk_tls.aio_channel(c.master, who) as ch:
        stub = agent_pb2_grpc.AgentServiceStub(ch)  # type: ignore[no-untyped-call]
        call = stub.Connect(timeout=10)
        await call.write(first)
        reply: agent_pb2.MasterMessage = await call.read()
        call.cancel()
        return reply


async def test_agents_claim_only_what_they_are_granted_and_secrets_reach_only_theirs(
    cluster: tuple[LocalCluster, Path],
) -> None:
    c, pki = cluster
    rogue, node2, batch = cred(pki, "rogue"), cred(pki, "node-2"), cred(pki, "batch")
    # A framework's certificate is not an agent's; an ungranted agent principal may not
    # register; a granted one may not claim 1e6 cpus, the GPU pool's label, or a reservation.
    await denied(_connect(c, batch, _register("h")))
    await denied(_connect(c, rogue, _register("h")))
    huge = common_pb2.Resources(cpus=1e6, mem=4096, disk=1000)
    assert "cpus 1e+06 would exceed the cap of 64" in await denied(
        _connect(c, node2, _register("h", resources=huge))
    )
    # ... nor GPUs its rule's cap does not name (deny by default: issue #41).
    gpus = common_pb2.Resources(cpus=4, mem=4096, disk=1000, gpus=1000)
    assert "gpus 1000 would exceed the cap of 0" in await denied(
        _connect(c, node2, _register("h", resources=gpus))
    )
    assert "may not claim attribute gpu-sku=inference" in await denied(
        _connect(c, node2, _register("h", attributes={"gpu-sku": "inference"}))
    )
    reserved = {"inference": common_pb2.Resources(cpus=1)}
    assert "may not reserve resources for role inference" in await denied(
        _connect(c, node2, _register("h", reservations=reserved))
    )
    # The legitimate agent (node-1, a real `corral agent`) registers; node-2 cannot take its id.
    await c.add_agent("node-1", "cpus:4;mem:4096;disk:1000;ports:[31000-31010]")
    await c.wait_for_agents(1, WAIT)
    state = await c.state()
    (agent,) = state.agents
    assert agent.info.principal == "node-1"
    takeover = _register("h")
    takeover.register.info.id = agent.info.id
    assert "belongs to principal 'node-1'" in await denied(_connect(c, node2, takeover))
    # A task's secret environment reaches its process on node-1 and nothing else shows it.
    inference = cred(pki, "inference")
    async with sdk.Driver(None, info("i", "inference"), c.master, tls=inference) as driver:
        offers = await _first_offers(driver)
        task = sdk.task("show", 'echo "got $TOKEN"', cpus=0.1, mem=16, secret_env={"TOKEN": SECRET})
        await driver.launch(offers[:1], [task])
        async with asyncio.timeout(WAIT):
            async for event in driver.events():
                if isinstance(event, sdk.UpdateEvent) and sdk.is_terminal(event.status.state):
                    assert event.status.state == sdk.TaskState.TASK_STATE_FINISHED
                    break
        # What a task prints is its owner's to read (corral logs), and the operators': a
        # principal granted `read` only, or nothing, is refused (over HTTP too), also for a
        # task that does not exist.
        for who in ("inference", "ops"):
            got = await _task_file(c, cred(pki, who), task.task_id)
            assert f"got {SECRET}".encode() in got, who
        others = (("observer", task.task_id), ("batch", task.task_id), ("observer", "no-task"))
        for who, task_id in others:
            message = await denied(_task_file(c, cred(pki, who), task_id))
            assert f"principal {who} may not call ReadTaskFile" in message, message
        ssl = cred(pki, "observer").ssl_context()
        url = f"https://{c.http}/api/v1/tasks/{task.task_id}/files/stdout"
        async with (
            aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ssl)) as http,
            http.get(url) as r,
        ):
            assert r.status == 403 and SECRET not in await r.text()
        # Another framework principal cannot take the framework over with its id.
        batch_takeover = info("i", "inference", id=driver.framework_id)
        await denied(sdk.Driver(None, batch_takeover, c.master, tls=batch).__aenter__())
    outputs = list((c.work_dir / "node-1").rglob("stdout"))
    assert any(f"got {SECRET}" in p.read_text() for p in outputs), outputs
    state_json = (await c.http_get("/api/v1/state")).decode()
    page = (await c.http_get("/")).decode()
    events_json = (await c.http_get("/api/v1/events")).decode()
    proto = (await c.state()).SerializeToString()
    logs = c.logs()
    for where, text in (("state", state_json), ("page", page), ("events", events_json)):
        assert SECRET not in text, where
    assert SECRET.encode() not in proto
    assert SECRET not in logs
    checkpoints = [p.read_bytes() for p in (c.work_dir / "node-1").rglob("task.json")]
    assert all(SECRET.encode() not in b for b in checkpoints)
    # An agent whose grant pins hostnames may not register as another node (issue #41).
    edge = cred(pki, "edge-1")
    assert "may not register an agent with hostname gpu-host-1" in await denied(
        _connect(c, edge, _register("gpu-host-1"))
    )
    assert (await _connect(c, edge, _register("edge-1.edge.example.com"))).HasField("registered")


async def _task_file(c: LocalCluster, who: sdk_tls.TLS, task_id: str) -> bytes:
    request = operator_pb2.ReadTaskFileRequest(task_id=task_id, path="stdout")
    async with sdk_tls.aio_channel(c.master, who) as ch:
        stub = operator_pb2_grpc.OperatorStub(ch)  # type: ignore[no-untyped-call]
        return b"".join([chunk.data async for chunk in stub.ReadTaskFile(request, timeout=10)])


async def test_the_acl_file_is_reloaded_when_it_changes_and_a_bad_one_is_refused(
    cluster: tuple[LocalCluster, Path], tmp_path: Path
) -> None:
    c, pki = cluster
    batch = cred(pki, "batch")
    system = sdk.Demand("d", 1, cpus=1, mem=64, priority_class="system")
    async with sdk.Driver(None, info("b", "batch"), c.master, tls=batch) as driver:
        await denied(driver.set_demands([system]))
        acls = tmp_path / "acls.yaml"
        acls.write_text(
            ACLS.replace('version: "1"', 'version: "2"').replace(
                "priority_classes: [batch]", "priority_classes: [batch, system]"
            )
        )
        await _wait_version(c, "2")
        await driver.set_demands([system])  # granted now
        acls.write_text("rules: [{name: broken}]")  # names nobody: refused, version 2 stays
        async with asyncio.timeout(WAIT):
            while not await events(c, "AclsRejected"):
                await asyncio.sleep(0.2)  # another process's file watch: no event to await
        assert (await c.state()).acls.version == "2"
    assert "names no principals and no cert_roles" in (await events(c, "AclsRejected"))[0].message


async def _wait_version(c: LocalCluster, version: str) -> None:
    async with asyncio.timeout(WAIT):
        while (await c.state()).acls.version != version:
            await asyncio.sleep(0.2)  # the master polls its file each second


def test_a_bad_acl_file_stops_the_master_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "acls.yaml"
    for text, words in (
        ("rules: [{name: x, principals: [a], frameworks: {roles: 5}}]", "must be a list"),
        ("rules: [{name: x, principals: [a], operator: [read], nope: 1}]", "unknown field 'nope'"),
        ("{not yaml", "neither JSON nor YAML"),
    ):
        bad.write_text(text)
        done = corral(
            "master", "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", "--acls", str(bad)
        )
        assert done.returncode == 2, done.stderr
        assert words in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    done = corral("master", "--insecure", "--acls", str(bad))
    assert done.returncode == 2 and "--acls needs TLS" in done.stderr


async def test_the_cli_fails_fast_naming_why_it_cannot_reach_a_master(
    cluster: tuple[LocalCluster, Path],
) -> None:
    """Issue #40: a refused connection took the whole --timeout and hinted at TLS. Nothing
    listening is said at once, with no TLS hint; a plain-text master is named as one."""
    _c, pki = cluster
    ops = ("--tls-dir", str(pki / "ops"))
    with socket.socket() as bound:  # bound, never listening: connections to it are refused
        bound.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{bound.getsockname()[1]}"
        started = time.monotonic()
        done = corral("get", "agents", "--master", address, "--timeout", "60", *ops)
        took = time.monotonic() - started
    assert done.returncode == 1, done
    assert done.stderr.strip() == (
        f"corral get: nothing listens at {address} (connection refused): is the master "
        "running, and is this its gRPC address (corral master --grpc)?"
    ), done.stderr
    assert took < 30, f"it waited {took:.1f} s of its 60 s timeout for nothing"
    async with LocalCluster(agents=0, insecure=True) as plain:
        done = corral("get", "agents", "--master", plain.master, "--timeout", "60", *ops)
        assert done.returncode == 1, done
        assert "speaks plain text (a master started with --insecure)" in done.stderr, done.stderr


async def _running(driver: sdk.Driver, task_id: str) -> None:
    async with asyncio.timeout(WAIT):
        async for event in driver.events():
            if isinstance(event, sdk.UpdateEvent) and event.status.task_id == task_id:
                assert not sdk.is_terminal(event.status.state), event.status
                if event.status.state == sdk.TaskState.TASK_STATE_RUNNING:
                    return


async def _framework_known(c: LocalCluster, framework_id: str) -> None:
    async with asyncio.timeout(WAIT):
        while framework_id not in {f.info.id for f in (await c.state()).frameworks}:
            await asyncio.sleep(0.2)  # the agent re-registers with the restarted master


async def test_a_restarted_master_that_forgot_its_registry_gives_a_framework_to_its_owner_only(
    tmp_path: Path,
) -> None:
    # Issue #41, item 1: a master restarted with no registry learns a framework from its
    # tasks' agents; the first principal to SUBSCRIBE with its id took it (and its tasks'
    # secrets, through their output). Its owner must survive the restart, and its id be
    # unguessable.
    pki = await asyncio.to_thread(make_pki, tmp_path)
    acls = tmp_path / "acls.yaml"
    acls.write_text(ACLS)
    async with LocalCluster(
        agents=0,
        work_dir=tmp_path / "cluster",
        master_args=(
            *("--tls-dir", str(pki / "master"), "--acls", str(acls)),
            *("--registry", "memory"),  # the master forgets every framework when it stops
        ),
        tls=cred(pki, "ops"),
        agent_tls=cred(pki, "node-1"),
    ) as c:
        await c.add_agent("node-1", "cpus:4;mem:4096;disk:1000;ports:[31000-31010]")
        await c.wait_for_agents(1, WAIT)
        inference, batch = cred(pki, "inference"), cred(pki, "batch")
        show = sdk.task(
            "show", 'echo "got $TOKEN"; sleep 600', cpus=0.1, mem=16, secret_env={"TOKEN": SECRET}
        )
        async with sdk.Driver(None, info("i", "inference"), c.master, tls=inference) as driver:
            framework_id = driver.framework_id
            offers = await _first_offers(driver)
            await driver.launch(offers[:1], [show])
            await _running(driver, show.task_id)
        master_id = json.loads(await c.http_get("/health"))["master_id"]
        assert re.fullmatch(rf"{master_id}-F[0-9a-f]{{24}}", framework_id), framework_id
        await c.restart_master()
        await c.wait_for_agents(1, WAIT)
        await _framework_known(c, framework_id)
        # Batch, knowing the id, subscribes first: in its own role, or in the owner's.
        for role in ("batch", "inference"):
            hijack = info("i", role, id=framework_id)
            message = await denied(sdk.Driver(None, hijack, c.master, tls=batch).__aenter__())
            if role == "batch":
                assert f"framework {framework_id} belongs to principal 'inference'" in message
        message = await denied(_task_file(c, batch, show.task_id))
        assert "may not call ReadTaskFile" in message
        # The owner takes it back, with its task still running; its output is the owner's.
        again = info("i", "inference", id=framework_id)
        async with sdk.Driver(None, again, c.master, tls=inference) as driver:
            assert driver.framework_id == framework_id
            tasks = {t.info.task_id: t for t in (await c.state()).tasks}
            assert tasks[show.task_id].status.state == sdk.TaskState.TASK_STATE_RUNNING
            assert f"got {SECRET}".encode() in await _task_file(c, inference, show.task_id)
            await driver.kill(show.task_id)
    audit = await asyncio.to_thread(lambda: (tmp_path / "cluster" / "master.log").read_text())
    assert SECRET not in audit


async def test_a_restarted_master_that_forgot_its_registry_gives_an_agent_id_to_its_owner_only(
    tmp_path: Path,
) -> None:
    # Issue #41, item 2: right after a restart that forgot every agent, node-2 registered with
    # gpu-node-1's id; the GPU agent was then refused on every retry.
    pki = await asyncio.to_thread(make_pki, tmp_path)
    acls = tmp_path / "acls.yaml"
    acls.write_text(ACLS)
    async with LocalCluster(
        agents=0,
        work_dir=tmp_path / "cluster",
        master_args=(
            *("--tls-dir", str(pki / "master"), "--acls", str(acls)),
            *("--registry", "memory"),
        ),
        tls=cred(pki, "ops"),
        agent_tls=cred(pki, "gpu-node-1"),
    ) as c:
        gpu, resources = {"zone": "a", "gpu-sku": "inference"}, "cpus:4;mem:4096;disk:1000;gpus:2"
        await c.add_agent("gpu-node-1", resources, attributes=gpu)
        await c.wait_for_agents(1, WAIT)
        (agent,) = (await c.state()).agents
        gpu_id = agent.info.id
        # The agent keeps the principal its id was issued to beside the id and its secret
        # (written once it has read the master's answer: another process, so polled).
        id_file = c.work_dir / "gpu-node-1" / "agent_id"
        async with asyncio.timeout(WAIT):
            while not id_file.exists() or len(id_file.read_text().splitlines()) < 3:
                await asyncio.sleep(0.05)
        kept = id_file.read_text().splitlines()
        assert (kept[0], kept[2]) == (gpu_id, "gpu-node-1")
        await c.kill("gpu-node-1")
        await c.restart_master()
        # node-2 is granted agents, and presents the GPU agent's id first: refused, with any
        # secret, and whatever principal it says the id was issued to.
        node2 = cred(pki, "node-2")
        for claimed in ("", "node-2", "gpu-node-1"):
            takeover = _register("h")
            takeover.register.info.id = gpu_id
            takeover.register.info.principal = claimed
            takeover.register.secret = "guessed"
            message = await denied(_connect(c, node2, takeover))
            assert "node-2" in message and gpu_id in message, message
        # The GPU agent comes back with its id (its sealed secret proves it) and is active.
        await c.restart_agent("gpu-node-1", resources)
        await c.wait_for_agents(1, WAIT)
        (agent,) = (await c.state()).agents
        assert (agent.info.id, agent.info.principal) == (gpu_id, "gpu-node-1")


async def test_a_half_written_acl_file_that_still_parses_is_not_applied(
    cluster: tuple[LocalCluster, Path], tmp_path: Path
) -> None:
    # Issue #41, item 6: cut inside a rule, the file parsed, and the master applied it with
    # the agents' rules gone. A reload that would lock out a certificate role in use is
    # refused, unless the file says it means it.
    c, _ = cluster
    await c.add_agent("node-1", "cpus:4;mem:4096;disk:1000;ports:[31000-31010]")
    await c.wait_for_agents(1, WAIT)
    acls = tmp_path / "acls.yaml"
    cut = ACLS[: ACLS.index('    agents:\n      attributes: {zone: ["*"]}\n')]
    acls.write_text(cut)  # the writer stopped here: a crash, a full disk
    async with asyncio.timeout(WAIT):
        while not (rejected := await events(c, "AclsRejected")):
            await asyncio.sleep(0.2)  # another process's file watch: no event to await
    message = rejected[0].message
    assert "grants certificate role 'agent' nothing its 1 principals in use (node-1) do" in message
    assert "revoke_cert_roles: [agent]" in message, message
    state = await c.state()
    assert state.acls.version == "1" and "gpu-nodes" in state.acls.rules
    # Meant: the operator names the role, and the file is applied.
    acls.write_text(cut.replace('version: "1"', 'version: "2"\nrevoke_cert_roles: [agent]'))
    await _wait_version(c, "2")
    assert "gpu-nodes" not in (await c.state()).acls.rules


async def test_two_tenants_run_a_task_of_one_id_on_one_agent_apart(
    cluster: tuple[LocalCluster, Path],
) -> None:
    # Issue #41, item 7: a task id another tenant used on a shared agent was refused "in use on
    # agent S by another framework", which told a tenant which ids others use. Agents key tasks
    # by (framework, task), as Mesos does: both run, apart, and each sees only its own.
    c, pki = cluster
    await c.add_agent("node-1", "cpus:4;mem:4096;disk:1000;ports:[31000-31010]")
    await c.wait_for_agents(1, WAIT)
    tenants = {"inference": cred(pki, "inference"), "batch": cred(pki, "batch")}
    async with contextlib.AsyncExitStack() as stack:
        drivers: dict[str, sdk.Driver] = {}
        for name, tls in tenants.items():  # one after the other: one agent, one offer at a time
            driver = drivers[name] = await stack.enter_async_context(
                sdk.Driver(None, info(name[0], name), c.master, tls=tls)
            )
            offers = await _first_offers(driver)
            # The same id for both tenants, on the one agent.
            job = sdk.task(
                "job", f"echo {name}-was-here; sleep 600", cpus=0.1, mem=16, task_id="job"
            )
            await driver.launch(offers[:1], [job])
            await _running(driver, "job")
        tasks = [(t.info.framework_id, t.status.state) for t in (await c.state()).tasks]
        running = sdk.TaskState.TASK_STATE_RUNNING
        assert sorted(tasks) == sorted((d.framework_id, running) for d in drivers.values())
        # Batch kills its "job": inference's runs on; each reads its own output only.
        await drivers["batch"].kill("job")
        async with asyncio.timeout(WAIT):
            async for event in drivers["batch"].events():
                if isinstance(event, sdk.UpdateEvent) and sdk.is_terminal(event.status.state):
                    break
        by_fw = {t.info.framework_id: t.status.state for t in (await c.state()).tasks}
        assert by_fw[drivers["inference"].framework_id] == running
        mine = await _task_file_of(c, tenants["inference"], drivers["inference"], "job")
        assert b"inference-was-here" in mine and b"batch" not in mine
        await drivers["inference"].kill("job")


async def _task_file_of(
    c: LocalCluster, who: sdk_tls.TLS, driver: sdk.Driver, task_id: str
) -> bytes:
    request = operator_pb2.ReadTaskFileRequest(
        task_id=task_id, framework_id=driver.framework_id, path="stdout"
    )
    async with sdk_tls.aio_channel(c.master, who) as ch:
        stub = operator_pb2_grpc.OperatorStub(ch)  # type: ignore[no-untyped-call]
        return b"".join([chunk.data async for chunk in stub.ReadTaskFile(request, timeout=10)])
