"""The shipped frameworks and the CLI as a tenant uses them, under the ACL docs/security.md
shows, on real processes with real certificates (issue #40, defects 3, 4 and 5).

The cluster: `corral certs init` makes a CA; `corral certs issue` certificates for an
operator, two framework principals (inference, granted the GPU pool; batch, granted its role
and class only) and two agents (node-1, and gpu-node-1 whose taint only inference tolerates);
the master runs with --tls-dir and the docs' ACL example as its --acls file.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import grpc
import pytest

from corral.frameworks import sdk
from corral.frameworks.sdk import tls as sdk_tls
from corral.frameworks.sdk.testing import LocalCluster
from corral.v1 import operator_pb2, operator_pb2_grpc
from tests.integration.recording import WAIT

pytestmark = pytest.mark.e2e

CORRAL = (sys.executable, "-m", "corral.cli.main")
ROOT = Path(__file__).resolve().parents[2]
GPU_TAINT = "gpu-sku=inference:NoSchedule"
PRINCIPALS = (
    ("ops", "operator"),
    ("inference", "framework"),
    ("batch", "framework"),
    ("node-1", "agent"),
    ("gpu-node-1", "agent"),
)


GPU_HOST = socket.gethostname()


def docs_acl() -> str:
    """The ACL example of docs/security.md, as an operator would copy it."""
    text = (ROOT / "docs" / "security.md").read_text()
    (block,) = re.findall(r"```yaml\n(version:.*?)```", text, re.S)
    # The example pins each GPU node to its own DNS name; here every agent runs on this host,
    # whose name the gang's workers must resolve to find each other, so the pin names it.
    pin = '"{principal}.gpu.example.com"'
    assert pin in block, "the docs' example no longer pins GPU nodes' hostnames"
    return str(block).replace(pin, f'"{GPU_HOST}"')


class Env:
    """The cluster, its certificates, and `corral` as its users run it."""

    def __init__(self, cluster: LocalCluster, pki: Path, home: Path) -> None:
        self.cluster, self.pki, self.home = cluster, pki, home

    def cred(self, name: str) -> sdk_tls.TLS:
        return sdk_tls.TLS.from_dir(self.pki / name)

    def flags(self, name: str) -> tuple[str, ...]:
        return ("--master", self.cluster.master, "--tls-dir", str(self.pki / name))

    def env(self) -> dict[str, str]:
        return {**os.environ, "CORRAL_HOME": str(self.home)}

    async def corral(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return await asyncio.to_thread(
            subprocess.run,
            [*CORRAL, *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            env=self.env(),
        )

    async def denied(self, subject: str) -> int:
        """How many Denied events name ``subject``."""
        async with self.cluster.channel() as ch:
            stub = operator_pb2_grpc.OperatorStub(ch)  # type: ignore[no-untyped-call]
            got = await stub.GetEvents(operator_pb2.GetEventsRequest(reason="Denied"), timeout=10)
        return sum(e.subject == subject for e in got.events)


def _issue(root: Path, home: Path) -> Path:
    env = {**os.environ, "CORRAL_HOME": str(home)}
    pki = root / "pki"

    def run(*args: str) -> None:
        done = subprocess.run([*CORRAL, *args], capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stderr

    run("certs", "init", "--dir", str(pki))
    for name, role in PRINCIPALS:
        run("certs", "issue", name, "--role", role, "--dir", str(pki))
    return pki


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[Env]:
    home = tmp_path / "home"
    home.mkdir()
    pki = await asyncio.to_thread(_issue, tmp_path, home)
    acls = tmp_path / "acls.yaml"
    acls.write_text(docs_acl())
    classes = tmp_path / "classes.json"
    classes.write_text(json.dumps([{"name": "prod-inference", "value": 100_000}]))
    async with LocalCluster(
        agents=0,
        work_dir=tmp_path / "cluster",
        master_args=(
            *("--tls-dir", str(pki / "master"), "--acls", str(acls)),
            *("--priority-classes", str(classes), "--allocation-interval", "0.2"),
        ),
        tls=sdk_tls.TLS.from_dir(pki / "ops"),
        agent_tls=sdk_tls.TLS.from_dir(pki / "node-1"),
    ) as c:
        await c.add_agent("node-1", "cpus:4;mem:4096;disk:1000;ports:{ports}", attributes="zone:a")
        c.agent_tls = sdk_tls.TLS.from_dir(pki / "gpu-node-1")
        c.agent_args = ("--taints", GPU_TAINT)  # the GPU pool: only inference tolerates it
        await c.add_agent(
            "gpu-node-1",
            "cpus:4;mem:4096;disk:1000;gpus:2;ports:{ports}",
            attributes={"zone": "a", "gpu-sku": "inference"},
            hostname=GPU_HOST,  # the docs' rule pins GPU nodes' hostnames (docs_acl)
        )
        await c.wait_for_agents(2, WAIT)
        yield Env(c, pki, home)


async def test_a_refused_demand_ends_the_job_at_once_and_a_framework_explains_its_own(
    env: Env, tmp_path: Path
) -> None:
    # Issue #40, defect 3: `corral run batch --priority-class system`, not granted, printed
    # "the master did not say why (PERMISSION_DENIED: ... Explain)" every 5 s for 10 minutes.
    batch = env.flags("batch")
    reason = "PERMISSION_DENIED: principal batch may not use priority class system"
    started = time.monotonic()
    done = await env.corral(
        "run", "batch", *batch, "--role", "batch", "--tasks", "1", "--priority-class", "system"
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.startswith(f"corral run batch: SetDemands failed: {reason}"), done.stderr
    gang = await env.corral(
        *("run", "gang", *batch, "--role", "batch", "--workers", "1", "--steps", "1"),
        *("--priority-class", "system", "--checkpoint-dir", str(tmp_path / "ckpt")),
    )
    assert gang.returncode == 1, gang.stdout + gang.stderr
    assert gang.stderr.startswith(f"corral run gang: SetDemands failed: {reason}"), gang.stderr
    app = tmp_path / "sys.json"
    app.write_text(
        json.dumps(
            {"id": "sys", "command": "sleep 60", "priority_class": "system", "role": "batch"}
        )
    )
    serving = await env.corral("run", "serving", *batch, "--config", str(app))
    assert serving.returncode == 1, serving.stdout + serving.stderr
    assert f"SetDemands failed: {reason}" in serving.stderr, serving.stderr
    assert "names demand 'sys'" not in serving.stdout + serving.stderr
    assert time.monotonic() - started < 60  # each ends at once, not after minutes
    refusals = await env.denied("batch")
    assert 3 <= refusals <= 6, refusals  # a refusal or two per run, not one every 5 s

    # A job that waits: the master says why, to the framework's own principal (no grant).
    done = await env.corral(
        *("run", "batch", *batch, "--role", "batch", "--tasks", "1", "--cpus", "100"),
        *("--duration", "1", "--give-up-after", "6"),
    )
    assert done.returncode == 1, done.stdout + done.stderr
    waiting = [line for line in done.stdout.splitlines() if "waiting on the master: " in line]
    assert waiting and all("insufficient cpus" in line for line in waiting), done.stdout
    assert "did not say why" not in done.stdout
    assert await env.denied("batch") == refusals

    # Its own framework's explanation, over gRPC and HTTP; not another's, nor every tenant's.
    info = sdk.FrameworkInfo(name="waits", role="batch")
    async with sdk.Driver(None, info, env.cluster.master, tls=env.cred("batch")) as driver:
        await driver.set_demands([sdk.Demand("big", 1, cpus=100, mem=64, priority_class="batch")])
        await env.cluster.wait_for_cycles(2, WAIT)
        (pending,) = await sdk.why_pending(
            env.cluster.master, driver.framework_id, tls=env.cred("batch")
        )
        assert "insufficient cpus" in pending.summary
        explained = await env.corral("explain", driver.framework_id, *batch)
        assert explained.returncode == 0 and "demand big" in explained.stdout, explained.stderr
        ssl = env.cred("batch").ssl_context()
        base = f"https://{env.cluster.http}/api/v1"
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ssl)) as http:
            async with http.get(f"{base}/frameworks/{driver.framework_id}/explain") as r:
                assert r.status == 200 and (await r.json())["framework_id"] == driver.framework_id
            async with http.get(f"{base}/pending") as r:
                assert r.status == 403
        inference = sdk.FrameworkInfo(name="other", role="inference")
        async with sdk.Driver(None, inference, env.cluster.master, tls=env.cred("inference")) as o:
            for framework_id in (o.framework_id, "no-such-framework"):
                with pytest.raises(sdk.CallError) as refused:
                    await sdk.why_pending(env.cluster.master, framework_id, tls=env.cred("batch"))
                assert refused.value.code == grpc.StatusCode.PERMISSION_DENIED
                assert "principal batch may not call Explain" in refused.value.message
            await o.teardown()
        await driver.teardown()


async def test_a_framework_reads_its_task_s_output_through_the_cli(env: Env) -> None:
    # Issue #40, defect 4: `corral logs TASK --tls-dir pki/batch` asked GetPriorityClasses
    # first (to find the leader), which the batch principal may not call.
    info = sdk.FrameworkInfo(name="echo", role="batch")
    async with sdk.Driver(None, info, env.cluster.master, tls=env.cred("batch")) as driver:
        task = sdk.task(
            "hello", "echo hello from $CORRAL_TASK_ID", cpus=0.1, mem=16, priority_class="batch"
        )
        async with asyncio.timeout(WAIT):
            async for event in driver.events():
                if isinstance(event, sdk.OffersEvent) and event.offers:
                    await driver.launch(event.offers[:1], [task])
                elif isinstance(event, sdk.UpdateEvent) and sdk.is_terminal(event.status.state):
                    assert event.status.state == sdk.TaskState.TASK_STATE_FINISHED, event.status
                    break
        denied_before = await env.denied("batch")
        logs = await env.corral("logs", task.task_id, *env.flags("batch"))
        assert logs.returncode == 0, logs.stderr
        assert logs.stdout == f"hello from {task.task_id}\n"
        # Through a list of masters whose first is not there: the stream finds the master.
        listed = await env.corral(
            "logs",
            task.task_id,
            *("--master", f"127.0.0.1:1,{env.cluster.master}"),
            *("--tls-dir", str(env.pki / "batch")),
        )
        assert listed.returncode == 0 and listed.stdout == logs.stdout, listed.stderr
        assert await env.denied("batch") == denied_before  # nothing gratuitous was asked
        # Another tenant may not read it.
        other = await env.corral("logs", task.task_id, *env.flags("inference"))
        assert other.returncode == 1
        assert "principal inference may not call ReadTaskFile" in other.stderr, other.stderr
        await driver.teardown()


async def _running_on(env: Env, framework_name: str, count: int) -> list[str]:
    """The agents of ``count`` RUNNING tasks of the framework named so, once there are."""
    deadline = asyncio.get_running_loop().time() + WAIT
    agents: list[str] = []
    while asyncio.get_running_loop().time() < deadline:
        state = await env.cluster.state()
        ids = {f.info.id for f in state.frameworks if f.info.name == framework_name}
        agents = [
            t.info.agent_id
            for t in state.tasks
            if t.info.framework_id in ids and t.status.state == sdk.TaskState.TASK_STATE_RUNNING
        ]
        if len(agents) >= count:
            return agents
        await asyncio.sleep(0.2)  # another process's state: nothing to await
    raise AssertionError(f"{framework_name}: {len(agents)} of {count} tasks running")


async def test_the_shipped_frameworks_run_on_a_tainted_gpu_pool(env: Env, tmp_path: Path) -> None:
    # Issue #40, defect 5: an app with "gpus": 1 stayed pending (no GPU_RESOURCES capability,
    # which the app format could not set), and `corral run gang` had no toleration flag.
    state = await env.cluster.state()
    (gpu_agent,) = [a.info.id for a in state.agents if a.info.resources.gpus > 0]
    inference = env.flags("inference")
    pool = ("--toleration", GPU_TAINT, "--priority-class", "prod-inference")
    app = tmp_path / "model.json"
    app.write_text(
        json.dumps(
            {
                "id": "model",
                "command": "sleep 600",
                "cpus": 0.5,
                "mem": 64,
                "gpus": 1,
                "role": "inference",
                "priority_class": "prod-inference",
                "tolerations": [GPU_TAINT],
            }
        )
    )
    proc = await asyncio.create_subprocess_exec(
        *CORRAL,
        *("run", "serving", *inference, "--config", str(app)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env.env(),
    )
    try:
        assert await _running_on(env, "serving:model", 1) == [gpu_agent]
        proc.send_signal(signal.SIGTERM)
        out, err = await asyncio.wait_for(proc.communicate(), WAIT)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, out.decode() + err.decode()

    batch = await env.corral(
        *("run", "batch", *inference, "--role", "inference", "--tasks", "2", "--gpus", "1"),
        *("--cpus", "0.5", "--mem", "32", "--command", "true", *pool),
        *("--constraint", "gpu-sku=inference"),
    )
    assert batch.returncode == 0, batch.stdout + batch.stderr
    assert "2 succeeded" in batch.stdout.splitlines()[-1], batch.stdout

    gang = await env.corral(
        *("run", "gang", *inference, "--role", "inference", "--workers", "2"),
        *("--gpus-per-worker", "1", "--cpus-per-worker", "0.5", "--mem-per-worker", "128"),
        *("--steps", "5", "--checkpoint-dir", str(tmp_path / "ckpt"), *pool),
    )
    assert gang.returncode == 0, gang.stdout + gang.stderr
    assert "trained" in gang.stdout.splitlines()[-1], gang.stdout
    state = await env.cluster.state()
    ran = {
        t.info.agent_id
        for t in state.tasks
        for f in state.frameworks
        if f.info.id == t.info.framework_id and f.info.name.startswith(("batch:", "gang:"))
    }
    assert ran == {gpu_agent}, ran
