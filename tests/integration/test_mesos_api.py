"""Mesos' v1 scheduler API on a real master with real agents (issue #46), driven by the
unmodified pymesos 0.3.15 (installed by scripts/install_pymesos.py) in a process of its own:
tests/integration/mesos_framework.py, a pymesos Scheduler that reports what happens to it.

The masters are secure as by default (TLS, ACLs); the Mesos listener is plain HTTP, as pymesos
speaks only that (--mesos-api-plaintext), with HTTP Basic credentials (--mesos-credentials).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from corral.frameworks import sdk
from corral.frameworks.sdk.testing import LocalCluster
from corral.loadtest.zookeeper import LocalZooKeeper
from corral.v1 import mesos_pb2
from corral.v1 import operator_pb2 as op_pb2
from corral.v1 import operator_pb2_grpc as op_grpc
from tests.ha_cluster import HaCluster
from tests.integration.recording import WAIT
from tests.zk import zookeeper

__all__ = ["zookeeper"]  # the fixture, used by name

pytestmark = pytest.mark.e2e

CORRAL = (sys.executable, "-m", "corral.cli.main")
PROGRAM = Path(__file__).with_name("mesos_framework.py")
CREDENTIALS = {
    "credentials": [
        {"principal": "ml", "secret": "ml-secret"},
        {"principal": "outsider", "secret": "outsider-secret"},
    ]
}
# Under --acls: the local operator credential (agents, the gRPC framework, the test's reads)
# may do everything; principal "ml" may subscribe frameworks; "outsider" is granted nothing.
ACLS = {
    "rules": [
        {
            "name": "ops",
            "cert_roles": ["operator"],
            "frameworks": {"roles": ["*"], "priority_classes": ["*"], "tolerations": ["*"]},
            "agents": {"attributes": {"*": ["*"]}, "reservations": ["*"]},
            "operator": ["*"],
        },
        {"name": "ml", "principals": ["ml"], "frameworks": {"roles": ["*"]}},
    ]
}


def mesos_args(tmp: Path, *extra: str) -> tuple[str, ...]:
    creds = tmp / "credentials.json"
    creds.write_text(json.dumps(CREDENTIALS))
    return (
        *("--mesos-api", "127.0.0.1:0", "--mesos-credentials", str(creds)),
        "--mesos-api-plaintext",
        *extra,
    )


class PyMesos:
    """One run of mesos_framework.py: its JSON lines as they come, commands to its stdin."""

    def __init__(self, proc: asyncio.subprocess.Process, stderr: Path) -> None:
        self.proc = proc
        self.stderr = stderr
        self.lines: list[dict[str, Any]] = []
        self._new = asyncio.Event()
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def start(cls, cluster: LocalCluster, name: str, *args: str, master: str = "") -> PyMesos:
        stderr = cluster.work_dir / f"{name}.stderr"
        with stderr.open("ab") as err:  # the child keeps its own copy of the descriptor
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                str(PROGRAM),
                *("--master", master or cluster.ready["mesos"], "--name", name),
                *args,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=err,
            )
        return cls(proc, stderr)

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        async for raw in self.proc.stdout:
            self.lines.append(json.loads(raw))
            self._new.set()
        self._new.set()

    def where(self, **fields: Any) -> list[dict[str, Any]]:
        return [x for x in self.lines if all(x.get(k) == v for k, v in fields.items())]

    async def until(self, what: str, check: Callable[[], Any], timeout: float = WAIT) -> Any:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            found = check()
            if found:
                return found
            if self._reader.done():
                raise AssertionError(f"pymesos ended before {what}: {self.report()}")
            left = deadline - loop.time()
            if left <= 0:
                raise AssertionError(f"no {what} within {timeout:g} s: {self.report()}")
            self._new.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._new.wait(), left)

    async def line(self, timeout: float = WAIT, **fields: Any) -> dict[str, Any]:
        found = await self.until(f"line {fields}", lambda: self.where(**fields), timeout)
        return found[0]  # type: ignore[no-any-return]

    async def send(self, command: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command.encode() + b"\n")
        await self.proc.stdin.drain()

    def report(self) -> str:
        return f"\nlines: {self.lines[-30:]}\nstderr: {self.stderr.read_text()[-3000:]}"

    async def wait(self, timeout: float = WAIT) -> int:
        try:
            code = await asyncio.wait_for(self.proc.wait(), timeout)
        except TimeoutError:
            raise AssertionError(
                f"pymesos did not end within {timeout:g} s{self.report()}"
            ) from None
        await self._reader  # its output ends with it
        return code

    async def close(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader


@contextlib.asynccontextmanager
async def pymesos(
    cluster: LocalCluster, name: str, *args: str, master: str = ""
) -> AsyncIterator[PyMesos]:
    fw = await PyMesos.start(cluster, name, *args, master=master)
    try:
        yield fw
    finally:
        await fw.close()


async def framework_state(cluster: LocalCluster, name: str) -> Any:
    state = await cluster.state()
    (found,) = [f for f in state.frameworks if f.info.name == name]
    return found


async def until_state(
    cluster: LocalCluster, what: str, check: Callable[[Any], bool], timeout: float = WAIT
) -> Any:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        state = await cluster.state()
        if check(state):
            return state
        if loop.time() > deadline:
            raise AssertionError(f"master state: no {what} within {timeout:g} s\n{state}")
        await asyncio.sleep(0.1)  # polling another process's state: no event to await


def basic(principal: str, secret: str) -> dict[str, str]:
    token = base64.b64encode(f"{principal}:{secret}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


async def test_a_pymesos_framework_runs_on_corral(tmp_path: Path) -> None:
    """Subscribe with Basic credentials; offers in Mesos' shapes; launch command tasks; their
    updates acknowledged (uuid echoed); reconcile; kill; decline with a filter; revive;
    failover to a new process with the same framework id; tear down."""
    async with LocalCluster(
        agents=1,
        corral=CORRAL,
        agent_resources="cpus:2;mem:1024;disk:1000;gpus:0;ports:{ports}",
        agent_attributes=[{"rack": "r1", "slot": "3"}],
        master_args=mesos_args(tmp_path),
    ) as cluster:
        async with pymesos(
            cluster, "life", "--principal", "ml", "--secret", "ml-secret", "--tasks", "2"
        ) as fw:
            registered = await fw.line(event="registered")
            framework_id = registered["framework_id"]
            assert registered["master"]["version"] == "1.11.0"
            offer = (await fw.line(event="offers"))["offers"][0]
            by_name = {r["name"]: r for r in offer["resources"]}
            assert by_name["cpus"]["type"] == "SCALAR" and by_name["cpus"]["scalar"]["value"] == 2
            assert by_name["mem"]["scalar"]["value"] == 1024
            (span,) = by_name["ports"]["ranges"]["range"]
            assert (span["begin"], span["end"]) == cluster.port_range("agent-0")
            assert sorted(offer["attributes"], key=lambda a: a["name"]) == [
                {"name": "rack", "type": "TEXT", "text": {"value": "r1"}},
                {"name": "slot", "type": "SCALAR", "scalar": {"value": 3.0}},
            ]
            assert offer["agent_id"] and offer["hostname"]
            for task in ("life-1", "life-2"):
                running = await fw.line(event="update", task_id=task, state="TASK_RUNNING")
                assert running["has_uuid"] and running["agent_id"] == offer["agent_id"]
            # pymesos acknowledged each update by echoing its uuid: the master holds none.
            state = await until_state(
                cluster,
                "acknowledged updates",
                lambda s: any(
                    f.info.id == framework_id and f.pending_updates == 0 and f.tasks == 2
                    for f in s.frameworks
                ),
            )
            (mine,) = [f for f in state.frameworks if f.info.id == framework_id]
            assert mine.info.principal == "ml"

            await fw.send("reconcile life-1")
            answer = await fw.line(event="update", task_id="life-1", reason="REASON_RECONCILIATION")
            assert answer["state"] == "TASK_RUNNING" and answer["source"] == "SOURCE_MASTER"
            assert not answer["has_uuid"]

            await fw.send("kill life-1")
            await fw.line(event="update", task_id="life-1", state="TASK_KILLED")
            # Mesos sends TASK_KILLING only to frameworks with TASK_KILLING_STATE.
            assert not fw.where(event="update", state="TASK_KILLING"), fw.report()

            # Decline with a long filter: the agent is not offered again, for many cycles
            # (more than the master's 5 s default filter would hold it); a REVIVE clears it.
            await fw.send("decline-filter 3600")
            await fw.line(event="declined", refuse_seconds=3600.0)
            offers_before = len(fw.where(event="offers"))
            await cluster.wait_for_cycles(8, timeout=60)
            await asyncio.sleep(0)  # let the reader take what already arrived
            assert len(fw.where(event="offers")) == offers_before, fw.report()
            await fw.send("revive")
            await fw.until(
                "an offer after REVIVE", lambda: len(fw.where(event="offers")) > offers_before
            )

            # Failover: this process goes away without tearing down...
            await fw.send("failover")
            assert await fw.wait() == 0, fw.report()
        # ...and a new one takes over the framework id: its task is still there.
        async with pymesos(
            cluster,
            "life",
            *("--principal", "ml", "--secret", "ml-secret", "--framework-id", framework_id),
        ) as again:
            await again.line(event="reregistered", framework_id=framework_id)
            await again.send("reconcile")  # implicit: every task the master knows
            await again.line(event="update", task_id="life-2", state="TASK_RUNNING")
            mesos = cluster.ready["mesos"]
            async with (
                aiohttp.ClientSession() as http,
                http.get(f"http://{mesos}/master/state", headers=basic("ml", "ml-secret")) as r,
            ):
                assert r.status == 200
                mstate = await r.json()
            (fstate,) = [f for f in mstate["frameworks"] if f["id"] == framework_id]
            assert fstate["principal"] == "ml" and fstate["active"]
            assert [t["id"] for t in fstate["tasks"]] == ["life-2"]
            assert fstate["tasks"][0]["state"] == "TASK_RUNNING"
            assert fstate["tasks"][0]["slave_id"] == offer["agent_id"]
            assert [t["state"] for t in fstate["completed_tasks"]] == ["TASK_KILLED"]
            assert mstate["slaves"][0]["resources"]["ports"].startswith("[")
            assert mstate["slaves"][0]["attributes"] == {"rack": "r1", "slot": "3"}

            await again.send("stop")  # TEARDOWN
            await again.line(event="stopped")
            await until_state(
                cluster,
                "the framework torn down",
                lambda s: any(
                    f.info.id == framework_id and f.state == "removed" for f in s.frameworks
                ),
            )


async def test_acls_status_codes_and_drf_between_a_grpc_and_a_pymesos_framework(
    tmp_path: Path,
) -> None:
    acls = tmp_path / "acls.json"
    acls.write_text(json.dumps(ACLS))
    async with LocalCluster(
        agents=2,
        corral=CORRAL,
        agent_resources="cpus:2;mem:1024;disk:1000;gpus:0;ports:{ports}",
        master_args=mesos_args(tmp_path, "--acls", str(acls)),
    ) as cluster:
        mesos = cluster.ready["mesos"]
        url = f"http://{mesos}/api/v1/scheduler"
        # A principal with valid credentials and no grant: 403, recorded as Denied.
        async with pymesos(
            cluster, "outsider", "--principal", "outsider", "--secret", "outsider-secret"
        ) as fw:
            assert await fw.wait() != 0, fw.report()
            assert "Failed with HTTP 403" in fw.stderr.read_text(), fw.report()
            assert not fw.where(event="registered")
        denied = json.loads(await cluster.http_get("/api/v1/events?reason=Denied"))
        assert any(e["subject"] == "outsider" for e in denied), denied

        await _status_codes(url)

        # One gRPC framework and one pymesos framework, each wanting all 4 cpus: DRF gives
        # each half. Both decline with no filter until both are told to launch.
        grpc_fw = Greedy(tasks=8)
        info = sdk.FrameworkInfo(name="grpc-greedy")
        async with (
            sdk.Driver(grpc_fw, info, cluster.master) as driver,
            pymesos(
                cluster,
                "mesos-greedy",
                *("--principal", "ml", "--secret", "ml-secret", "--refuse", "0"),
                *("--cpus", "0.5", "--mem", "64"),
            ) as fw,
        ):
            await fw.line(event="registered")
            await fw.line(event="declined")
            await asyncio.wait_for(grpc_fw.declined.wait(), WAIT)
            grpc_fw.go.set()
            await fw.send("launch 8")

            def used(s: Any) -> dict[str, float]:
                return {f.info.name: f.used.cpus for f in s.frameworks if f.state == "subscribed"}

            state = await until_state(
                cluster,
                "both frameworks holding all 4 cpus",
                lambda s: sum(used(s).values()) >= 4 - 1e-9,
            )
            shares = used(state)
            assert shares == {"grpc-greedy": 2.0, "mesos-greedy": 2.0}, shares
            await driver.stop()


async def test_a_pymesos_framework_given_zk_follows_a_killed_leader(
    zookeeper: LocalZooKeeper, tmp_path: Path
) -> None:
    """Three masters with --mesos-api in one election: the leader's znode names its Mesos API,
    so pymesos given zk:// finds it; after kill -9 of the leader it finds the next one and
    subscribes again with its framework id, which keeps its task."""
    async with (
        HaCluster(
            zookeeper,
            masters=3,
            agents=1,
            corral=CORRAL,
            work_dir=tmp_path / "cluster",
            master_args=mesos_args(tmp_path, "--agent-reregister-timeout", "60"),
        ) as cluster,
        pymesos(
            cluster,
            "ha",
            *("--principal", "ml", "--secret", "ml-secret", "--tasks", "1"),
            *("--failover-timeout", "600"),
            master=cluster.url,
        ) as fw,
    ):
        framework_id = (await fw.line(event="registered"))["framework_id"]
        await fw.line(event="update", task_id="ha-1", state="TASK_RUNNING")
        old = await cluster.leader()
        await cluster.kill(old)
        new = await cluster.leader(timeout=WAIT)
        assert new != old
        await fw.line(event="reregistered", framework_id=framework_id, timeout=2 * WAIT)
        await cluster.wait_for_agents(1, WAIT)
        await fw.send("reconcile ha-1")
        answer = await fw.line(
            event="update", task_id="ha-1", reason="REASON_RECONCILIATION", timeout=WAIT
        )
        assert answer["state"] == "TASK_RUNNING", fw.report()
        # A standby answers Mesos calls with the leader's Mesos API, as a Mesos standby.
        mesos_of = {
            name: json.loads((cluster.work_dir / f"{name}-ready.json").read_text())["mesos"]
            for name in cluster.masters
            if name != old
        }
        (standby,) = [name for name in mesos_of if name != new]
        async with (
            aiohttp.ClientSession() as http,
            http.post(
                f"http://{mesos_of[standby]}/api/v1/scheduler",
                json={"type": "SUBSCRIBE", "subscribe": {"framework_info": {"name": "x"}}},
                headers=basic("ml", "ml-secret"),
                allow_redirects=False,
            ) as r,
        ):
            assert r.status == 307
            assert r.headers["Location"] == f"http://{mesos_of[new]}/api/v1/scheduler"
        await until_state(
            cluster,
            "the framework subscribed to the new leader with its task",
            lambda s: any(
                f.info.id == framework_id and f.state == "subscribed" and f.tasks == 1
                for f in s.frameworks
            ),
        )


class Greedy(sdk.Scheduler):
    """Declines (no filter) until ``go``, then launches up to ``tasks`` tasks of 0.5 cpus."""

    def __init__(self, tasks: int) -> None:
        self.left = tasks
        self.go = asyncio.Event()
        self.declined = asyncio.Event()

    async def offers(self, driver: sdk.Driver, offers: list[sdk.Offer]) -> None:
        for offer in offers:
            if not self.go.is_set():
                await driver.decline([offer], refuse_seconds=0)
                self.declined.set()
                continue
            packer = sdk.OfferPacker(offer)
            wanted = [
                sdk.task(f"greedy-{self.left - n}", "sleep 300", cpus=0.5, mem=64)
                for n in range(self.left)
            ]
            packer.add_all(wanted)
            self.left -= len(packer.tasks)
            await driver.launch([offer], packer.tasks, refuse_seconds=0)

    async def status(self, driver: sdk.Driver, status: sdk.TaskStatus) -> None:
        pass


async def _status_codes(url: str) -> None:
    """Mesos' answers to what is not a good call."""
    ml = basic("ml", "ml-secret")
    json_type = {"Content-Type": "application/json"}
    subscribe = {
        "type": "SUBSCRIBE",
        "subscribe": {"framework_info": {"user": "", "name": "raw"}},
    }
    async with aiohttp.ClientSession() as http:

        async def post(body: Any, **headers: str) -> tuple[int, str]:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            async with http.post(url, data=data, headers=headers) as r:
                return r.status, await r.text()

        assert (await post(subscribe, **json_type))[0] == 401
        assert (await post(subscribe, **json_type, **basic("ml", "wrong")))[0] == 401
        async with http.get(url, headers=ml) as r:
            assert r.status == 405
        assert (await post(subscribe, **ml, **{"Content-Type": "text/plain"}))[0] == 415
        status, _ = await post(subscribe, **ml, **json_type, Accept="text/html")
        assert status == 406
        status, why = await post(b"\x0a\xff", **ml, **{"Content-Type": "application/x-protobuf"})
        assert status == 400 and "Call" in why, why
        await _protobuf_subscription(http, url, ml)
        assert (await post(b"{not json", **ml, **json_type))[0] == 400
        status, why = await post(
            {"type": "DECLINE", "framework_id": {"value": "x"}, "decline": {}}, **ml, **json_type
        )
        assert status == 400 and "Mesos-Stream-Id" in why, why

        # A subscription of our own: 200, RecordIO, a stream id; calls with it are 202.
        async with http.post(url, json=subscribe, headers=ml) as stream:
            assert stream.status == 200
            assert stream.headers["Content-Type"] == "application/json"
            stream_id = stream.headers["Mesos-Stream-Id"]
            length = int((await stream.content.readline()).decode())
            first = json.loads(await stream.content.readexactly(length))
            assert first["type"] == "SUBSCRIBED", first
            fid = first["subscribed"]["framework_id"]
            assert first["subscribed"]["heartbeat_interval_seconds"] > 0
            call = {"framework_id": fid}
            with_stream = {**ml, **json_type, "Mesos-Stream-Id": stream_id}
            assert (await post({**call, "type": "SUPPRESS"}, **with_stream))[0] == 202
            assert (await post({**call, "type": "REVIVE"}, **with_stream))[0] == 202
            wrong = {**with_stream, "Mesos-Stream-Id": "not-it"}
            assert (await post({**call, "type": "SUPPRESS"}, **wrong))[0] == 400
            # The stream belongs to "ml": another principal may not use it.
            other = {**with_stream, **basic("outsider", "outsider-secret")}
            assert (await post({**call, "type": "SUPPRESS"}, **other))[0] == 403
            status, why = await post(
                {
                    **call,
                    "type": "ACCEPT",
                    "accept": {"offer_ids": [], "operations": [{"type": "RESERVE"}]},
                },
                **with_stream,
            )
            assert status == 400 and "RESERVE" in why
            # A launch on an offer that does not exist: 202, and the task comes back LOST
            # from the master, as on Mesos (the framework is not partition aware).
            status, _ = await post(
                {
                    **call,
                    "type": "ACCEPT",
                    "accept": {
                        "offer_ids": [{"value": "no-such-offer"}],
                        "operations": [
                            {
                                "type": "LAUNCH",
                                "launch": {
                                    "task_infos": [
                                        {
                                            "name": "t",
                                            "task_id": {"value": "t1"},
                                            "agent_id": {"value": "a"},
                                            "resources": [
                                                {
                                                    "name": "cpus",
                                                    "type": "SCALAR",
                                                    "scalar": {"value": 0.1},
                                                }
                                            ],
                                            "command": {"value": "true"},
                                        },
                                        {
                                            "name": "e",
                                            "task_id": {"value": "t2"},
                                            "agent_id": {"value": "a"},
                                            "executor": {"executor_id": {"value": "x"}},
                                        },
                                    ]
                                },
                            }
                        ],
                    },
                },
                **with_stream,
            )
            assert status == 202
            seen: dict[str, dict[str, Any]] = {}
            async with asyncio.timeout(WAIT):
                while len(seen) < 2:
                    n = int((await stream.content.readline()).decode())
                    event = json.loads(await stream.content.readexactly(n))
                    if event["type"] == "UPDATE":
                        status_json = event["update"]["status"]
                        seen[status_json["task_id"]["value"]] = status_json
            assert seen["t1"]["state"] == "TASK_LOST", seen
            assert seen["t1"]["reason"] == "REASON_INVALID_OFFERS"
            assert seen["t2"]["state"] == "TASK_ERROR"
            assert seen["t2"]["reason"] == "REASON_TASK_INVALID"
            assert "executor" in seen["t2"]["message"]
            assert (await post({**call, "type": "TEARDOWN"}, **with_stream))[0] == 202


async def _protobuf_subscription(
    http: aiohttp.ClientSession, url: str, auth: dict[str, str]
) -> None:
    """SUBSCRIBE and a call in application/x-protobuf: Mesos' own bytes both ways."""
    call = mesos_pb2.Call(type=mesos_pb2.Call.SUBSCRIBE)
    call.subscribe.framework_info.user = ""
    call.subscribe.framework_info.name = "raw-protobuf"
    protobuf = {"Content-Type": "application/x-protobuf", "Accept": "application/x-protobuf"}
    async with http.post(url, data=call.SerializeToString(), headers={**auth, **protobuf}) as r:
        assert r.status == 200, await r.text()
        assert r.headers["Content-Type"] == "application/x-protobuf"
        length = int((await r.content.readline()).decode())
        event = mesos_pb2.Event.FromString(await r.content.readexactly(length))
        assert event.type == mesos_pb2.Event.SUBSCRIBED
        framework_id = event.subscribed.framework_id.value
        assert framework_id and event.subscribed.heartbeat_interval_seconds > 0
        suppress = mesos_pb2.Call(type=mesos_pb2.Call.SUPPRESS)
        suppress.framework_id.value = framework_id
        headers = {**auth, **protobuf, "Mesos-Stream-Id": r.headers["Mesos-Stream-Id"]}
        async with http.post(url, data=suppress.SerializeToString(), headers=headers) as ok:
            assert ok.status == 202, await ok.text()
        teardown = mesos_pb2.Call(type=mesos_pb2.Call.TEARDOWN)
        teardown.framework_id.value = framework_id
        async with http.post(url, data=teardown.SerializeToString(), headers=headers) as ok:
            assert ok.status == 202, await ok.text()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--mesos-api", "127.0.0.1:0"), "--mesos-api needs --mesos-credentials FILE"),
        (
            ("--insecure", "--mesos-api", "127.0.0.1:0", "--mesos-api-open"),
            "add --mesos-api-plaintext",
        ),
        (("--mesos-api-plaintext",), "--mesos-api-plaintext needs --mesos-api HOST:PORT"),
    ],
)
async def test_an_unsafe_mesos_listener_stops_the_master_with_one_line(
    tmp_path: Path, flags: tuple[str, ...], message: str
) -> None:
    proc = await asyncio.create_subprocess_exec(
        *CORRAL,
        "master",
        *("--registry", "memory", "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0"),
        *flags,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), WAIT)
    assert proc.returncode == 2, (out, err)
    assert message in err.decode()
    assert "Traceback" not in err.decode()


EXECUTOR = Path(__file__).with_name("mesos_executor.py")


async def test_a_pymesos_custom_executor_runs_its_tasks_on_a_corral_agent(tmp_path: Path) -> None:
    """Tasks with an ExecutorInfo: the agent starts the pymesos executor program with Mesos'
    environment, which subscribes on the agent's /api/v1/executor, is given its task (LAUNCH,
    with the task's data) and reports its states; the scheduler receives them from the
    executor and acknowledges them. A kill reaches the executor (KILL); an executor killed
    with its task still running fails the task with REASON_EXECUTOR_TERMINATED, and the
    scheduler is told the executor ended (FAILURE: pymesos' executorLost), as it is of an
    executor that ended after its task. Framework messages go both ways between the scheduler
    and an executor."""
    async with (
        LocalCluster(
            agents=1,
            corral=CORRAL,
            agent_resources="cpus:2;mem:1024;disk:1000;gpus:0;ports:{ports}",
            master_args=mesos_args(tmp_path),
        ) as cluster,
        pymesos(
            cluster,
            "exec",
            *("--principal", "ml", "--secret", "ml-secret", "--tasks", "3"),
            *("--executor", str(EXECUTOR), "--data", "finish,run,run"),
        ) as fw,
    ):
        framework_id = (await fw.line(event="registered"))["framework_id"]
        given: dict[str, Any] = {}
        for task in ("exec-1", "exec-2", "exec-3"):
            running = await fw.line(event="update", task_id=task, state="TASK_RUNNING")
            assert running["source"] == "SOURCE_EXECUTOR" and running["has_uuid"], running
            given[task] = json.loads(running["message"])
        env = given["exec-1"]["env"]
        assert given["exec-1"]["data"] == "finish"
        assert given["exec-1"]["executor_id"] == "exec-1-executor"
        assert env["MESOS_FRAMEWORK_ID"] == framework_id
        assert env["MESOS_EXECUTOR_ID"] == "exec-1-executor"
        assert env["MESOS_AGENT_ENDPOINT"].startswith("127.0.0.1:")
        assert env["MESOS_DIRECTORY"] == env["MESOS_SANDBOX"]
        assert Path(env["MESOS_SANDBOX"]).is_dir()
        assert env["MESOS_CHECKPOINT"] == "1"  # the agent checkpoints its tasks
        finished = await fw.line(event="update", task_id="exec-1", state="TASK_FINISHED")
        assert finished["source"] == "SOURCE_EXECUTOR" and finished["message"] == "done"
        # pymesos acknowledged every update: the master holds none, the agent relayed all.
        await until_state(
            cluster,
            "every executor update acknowledged",
            lambda s: any(
                f.info.id == framework_id and f.pending_updates == 0 and f.tasks == 2
                for f in s.frameworks
            ),
        )

        # Framework messages both ways: scheduler -> executor (MESSAGE event), and its
        # answer executor -> scheduler, through the agent and the master.
        await fw.send("message exec-2 hello")
        echo = await fw.line(event="message", data="echo:hello")
        assert echo["executor_id"] == "exec-2-executor"
        assert echo["agent_id"] == finished["agent_id"]

        await fw.send("kill exec-2")  # the executor is told (KILL) and answers
        killed = await fw.line(event="update", task_id="exec-2", state="TASK_KILLED")
        assert killed["source"] == "SOURCE_EXECUTOR" and killed["message"] == "asked"

        os.kill(given["exec-3"]["pid"], signal.SIGKILL)  # the executor dies, task running
        failed = await fw.line(event="update", task_id="exec-3", state="TASK_FAILED")
        assert failed["reason"] == "REASON_EXECUTOR_TERMINATED", failed
        assert failed["source"] == "SOURCE_AGENT"
        assert "executor 'exec-3-executor' terminated (signal 9)" in failed["message"]
        # FAILURE with the executor id: pymesos calls executorLost, with the wait status
        # (killed by signal 9: 9).
        lost = await fw.line(event="executor_lost", executor_id="exec-3-executor")
        assert (lost["agent_id"], lost["status"]) == (finished["agent_id"], 9), lost
        # An executor whose task ended is told to end (SHUTDOWN): its exit is told too.
        ended = await fw.line(event="executor_lost", executor_id="exec-1-executor")
        assert ended["agent_id"] == finished["agent_id"], ended
        # pymesos aborts its driver and kills itself when the grace period ends; the agent
        # SIGKILLs it then too: whichever comes first, a clean exit (0) or signal 9.
        assert ended["status"] in (0, 9), ended


async def test_a_custom_executor_re_subscribes_to_its_restarted_agent(tmp_path: Path) -> None:
    """Agent restart as Mesos' recovery: the agent is SIGKILLed and started again on its work
    dir; it re-attaches to the executor's process and serves the executor API on the port it
    had, so the pymesos executor (MESOS_CHECKPOINT=1) subscribes again: framework messages
    and kills reach it as before."""
    async with (
        LocalCluster(
            agents=1,
            corral=CORRAL,
            agent_resources="cpus:2;mem:1024;disk:1000;gpus:0;ports:{ports}",
            master_args=mesos_args(tmp_path),
        ) as cluster,
        pymesos(
            cluster,
            "again",
            *("--principal", "ml", "--secret", "ml-secret", "--tasks", "1"),
            *("--executor", str(EXECUTOR), "--data", "run"),
        ) as fw,
    ):
        await fw.line(event="update", task_id="again-1", state="TASK_RUNNING")
        await cluster.restart_agent("agent-0")
        await cluster.wait_for_agents(1, timeout=WAIT)
        # pymesos calls reregistered (not registered) only in the process that subscribed
        # before: the same executor, re-attached, not started again.
        await fw.line(event="update", task_id="again-1", message="reregistered")
        await fw.send("message again-1 back")
        await fw.line(event="message", data="echo:back")
        await fw.send("kill again-1")
        killed = await fw.line(event="update", task_id="again-1", state="TASK_KILLED")
        assert killed["source"] == "SOURCE_EXECUTOR"
        assert not fw.where(event="update", task_id="again-1", state="TASK_FAILED"), fw.report()


async def test_a_pymesos_framework_is_told_of_agents_lost_and_deleted(tmp_path: Path) -> None:
    """FAILURE with an agent id (pymesos' slaveLost): an agent not heard from for
    --agent-timeout (SIGSTOPped: partitioned away) is marked unreachable, and an agent killed
    and then deleted by an operator is removed; each time the framework with a task there is
    told, after its task's own update (TASK_LOST, TASK_GONE)."""
    async with (
        LocalCluster(
            agents=2,
            corral=CORRAL,
            agent_resources="cpus:1;mem:1024;disk:1000;gpus:0;ports:{ports}",
            master_args=mesos_args(tmp_path, "--agent-timeout", "4"),
        ) as cluster,
        pymesos(
            cluster,
            "lost",
            *("--principal", "ml", "--secret", "ml-secret", "--tasks", "2", "--cpus", "1"),
            *("--command", "sleep 300"),
        ) as fw,
    ):
        on_agent = {}
        for task in ("lost-1", "lost-2"):  # one per agent: each task fills one
            running = await fw.line(event="update", task_id=task, state="TASK_RUNNING")
            on_agent[running["agent_id"]] = task
        assert len(on_agent) == 2, fw.report()

        cluster.pause("agent-0")  # silent: unreachable once --agent-timeout has passed
        try:
            lost = await fw.line(event="agent_lost")
            first = lost["agent_id"]
            update = await fw.line(event="update", task_id=on_agent[first], state="TASK_LOST")
            assert update["reason"] == "REASON_AGENT_REMOVED", update
            assert fw.lines.index(update) < fw.lines.index(lost), fw.report()
        finally:
            cluster.resume("agent-0")  # it re-registers; its task is killed or closed with it
        (second,) = set(on_agent) - {first}

        await cluster.kill("agent-1")  # its task runs on, in a session of its own
        await until_state(
            cluster,
            "agent-1 disconnected",
            lambda s: any(a.info.id == second and not a.connected for a in s.agents),
        )
        async with cluster.channel() as channel:
            stub = op_grpc.OperatorStub(channel)  # type: ignore[no-untyped-call]  # generated
            deleted = await stub.DeleteAgent(op_pb2.DeleteAgentRequest(agent_id=second))
        assert deleted.tasks_gone == 1
        gone = await fw.line(event="update", task_id=on_agent[second], state="TASK_GONE")
        assert gone["reason"] == "REASON_AGENT_REMOVED_BY_OPERATOR", gone
        removed = await fw.line(event="agent_lost", agent_id=second)
        assert fw.lines.index(gone) < fw.lines.index(removed), fw.report()
        assert len(fw.where(event="agent_lost")) == 2, fw.report()
        # Back as an agent the master no longer knows: the cluster's close stops it, and the
        # task it brings back with it.
        await cluster.restart_agent("agent-1")


async def test_tasks_naming_one_executor_run_in_one_executor_process(tmp_path: Path) -> None:
    """Mesos' rule: every task launched with the same executor id on an agent goes to one
    executor process (LAUNCH events to it, before and after it subscribed), whose own
    resources are charged once; an agent restart re-attaches it with all its tasks. The
    executor gets SHUTDOWN only when its last task ended, and its end is told once."""
    async with (
        LocalCluster(
            agents=1,
            corral=CORRAL,
            agent_resources="cpus:2;mem:1024;disk:1000;gpus:0;ports:{ports}",
            master_args=mesos_args(tmp_path),
        ) as cluster,
        pymesos(
            cluster,
            "shared",
            *("--principal", "ml", "--secret", "ml-secret", "--tasks", "2"),
            *("--executor", str(EXECUTOR), "--data", "run,run,finish", "--shared-executor"),
            *("--executor-cpus", "0.5"),
        ) as fw,
    ):
        framework_id = (await fw.line(event="registered"))["framework_id"]
        given = {}
        for task in ("shared-1", "shared-2"):  # one ACCEPT: the second waits for SUBSCRIBE
            running = await fw.line(event="update", task_id=task, state="TASK_RUNNING")
            given[task] = json.loads(running["message"])
        assert given["shared-1"]["pid"] == given["shared-2"]["pid"], given
        assert given["shared-2"]["executor_id"] == "shared-executor"
        # The executor's 0.5 cpus once, beside the tasks' 0.1 each.
        await until_state(
            cluster,
            "the executor's resources charged once",
            lambda s: any(
                f.info.id == framework_id and abs(f.used.cpus - 0.7) < 1e-6 for f in s.frameworks
            ),
        )
        # The agent restarts (kill -9): the executor's process is re-attached with both its
        # tasks, and it subscribes again (pymesos' reregistered).
        await cluster.restart_agent("agent-0")
        await cluster.wait_for_agents(1, timeout=WAIT)
        for task in ("shared-1", "shared-2"):
            await fw.line(event="update", task_id=task, message="reregistered")
        # A third task, to the running (subscribed again) executor.
        await fw.send("launch 1")
        third = await fw.line(event="update", task_id="shared-3", state="TASK_RUNNING")
        assert json.loads(third["message"])["pid"] == given["shared-1"]["pid"]
        await fw.line(event="update", task_id="shared-3", state="TASK_FINISHED")
        await fw.send("kill shared-1")
        await fw.line(event="update", task_id="shared-1", state="TASK_KILLED")
        # Its other task runs on: the executor was not told to shut down.
        await fw.send("reconcile shared-2")
        answer = await fw.line(event="update", task_id="shared-2", reason="REASON_RECONCILIATION")
        assert answer["state"] == "TASK_RUNNING", answer
        assert not fw.where(event="executor_lost"), fw.report()
        await fw.send("kill shared-2")
        await fw.line(event="update", task_id="shared-2", state="TASK_KILLED")
        lost = await fw.line(event="executor_lost", executor_id="shared-executor")
        assert lost["status"] in (0, 9), lost  # its own exit after SHUTDOWN, or the SIGKILL
        await until_state(
            cluster,
            "nothing charged once the executor ended",
            lambda s: any(f.info.id == framework_id and f.tasks == 0 for f in s.frameworks),
        )
        assert len(fw.where(event="executor_lost")) == 1, fw.report()


async def test_a_launch_group_is_refused_naming_it_and_its_offer_goes_back(
    tmp_path: Path,
) -> None:
    """LAUNCH_GROUP (Mesos' DEFAULT executor) does not map: each of its tasks is TASK_ERROR
    with REASON_TASK_GROUP_INVALID and a message naming it, and the offer is offered again."""
    async with (
        LocalCluster(
            agents=1,
            corral=CORRAL,
            agent_resources="cpus:2;mem:1024;disk:1000;gpus:0;ports:{ports}",
            master_args=mesos_args(tmp_path),
        ) as cluster,
        pymesos(
            cluster,
            "pod",
            *("--principal", "ml", "--secret", "ml-secret", "--tasks", "2", "--group"),
        ) as fw,
    ):
        for task in ("pod-1", "pod-2"):
            error = await fw.line(event="update", task_id=task, state="TASK_ERROR")
            assert error["reason"] == "REASON_TASK_GROUP_INVALID", error
            assert "LAUNCH_GROUP" in error["message"] and "DEFAULT" in error["message"], error
            assert error["source"] == "SOURCE_MASTER", error
        await fw.until("the agent offered again", lambda: len(fw.where(event="offers")) >= 2)
        state = await cluster.state()
        assert all(f.tasks == 0 for f in state.frameworks), state
