"""The autoscaler on real processes (docs/autoscaler.md): a master with no agents, a framework
with pending demands, and `corral autoscaler` whose `process` provider starts and stops real
`corral agent` processes (--simulate tasks). Pending batch work adds the agents it needs and
runs; they go again once the work ended and the unneeded time passed; a gang scales up by all
its members or not at all; a taint no template tolerates never scales up and says why; kill -9
and a restart act on the same records without a second scale-up; the what-if endpoint over
gRPC and HTTP, refused to a principal without the grant."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families

from corral.frameworks import sdk
from corral.frameworks.sdk import tls as sdk_tls
from corral.frameworks.sdk.testing import LocalCluster
from corral.v1 import common_pb2, operator_pb2, operator_pb2_grpc
from tests.integration.corral_cli import corral
from tests.integration.serving_service import ServingProcess, until_async
from tests.master_http import local_session, master_session

pytestmark = pytest.mark.e2e

FAST = ("--allocation-interval", "0.2")


class Autoscaler(ServingProcess):
    serve_command = ("autoscaler",)

    async def nodes(self) -> list[dict[str, Any]]:
        return list((await self.ok("GET", "/v1/nodes"))["nodes"])

    async def events(self, reason: str = "") -> list[dict[str, Any]]:
        got = (await self.ok("GET", "/v1/events"))["events"]
        return [e for e in got if not reason or e["reason"] == reason]

    async def wait(self, check: Callable[[], Any], what: str, timeout: float = 60) -> Any:
        return await until_async(check, timeout, what, self.logs)

    async def metrics(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        """/metrics as Prometheus reads it: (sample name, labels) -> value."""
        async with local_session() as session, session.get(self.url + "/metrics") as response:
            assert response.status == 200, await response.text()
            text = await response.text()
        return {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples
        }


def config_file(path: Path, groups: list[dict[str, Any]], **options: Any) -> Path:
    doc = {
        "scan-interval": 0.5,
        "scale-down-unneeded-time": 2,
        "scale-down-delay-after-add": 0,
        "max-node-provision-time": 60,
        "drain-grace-seconds": 1,
        "node-groups": groups,
        **options,
    }
    path.write_text(json.dumps(doc))
    return path


def group(name: str, resources: str, max_nodes: int, **more: Any) -> dict[str, Any]:
    template = {"resources": resources, **more.pop("template", {})}
    return {
        "name": name,
        "min": 0,
        "max": max_nodes,
        "simulate": True,
        "template": template,
        **more,
    }


class Batch(sdk.Scheduler):
    """Runs ``count`` tasks of its demand (``seconds`` each) wherever it is offered room; a gang
    launches its bundle whole. Once every task ended it asks for nothing more."""

    def __init__(self, count: int, seconds: float, cpus: float = 1, gang: bool = False) -> None:
        self.count, self.seconds, self.cpus, self.gang = count, seconds, cpus, gang
        self.launched = 0
        self.running: set[str] = set()
        self.ended: set[str] = set()
        self.agents: set[str] = set()
        self.done = asyncio.Event()

    def task(self) -> sdk.TaskInfo:
        n = self.launched
        self.launched += 1
        return sdk.task(
            f"t{n}", f"sleep {self.seconds}", cpus=self.cpus, mem=64,
            demand="work", simulate_seconds=self.seconds,
        )  # fmt: skip

    async def offers(self, driver: sdk.Driver, offers: list[sdk.Offer]) -> None:
        if self.gang:
            if offers and offers[0].gang_id and self.launched == 0:
                members = [self.task() for _ in offers]
                await driver.launch(offers, sdk.place_gang(offers, members))
            else:
                await driver.decline(offers, refuse_seconds=1)
            return
        for offer in offers:
            room = int(min(offer.resources.cpus, offer.resources.mem // 64))
            tasks = [self.task() for _ in range(min(room, self.count - self.launched))]
            if tasks:
                await driver.launch([offer], tasks)
            else:
                await driver.decline([offer], refuse_seconds=1)

    async def status(self, driver: sdk.Driver, status: sdk.TaskStatus) -> None:
        if status.state == common_pb2.TASK_STATE_RUNNING:
            self.running.add(status.task_id)
            self.agents.add(status.agent_id)
        elif sdk.is_terminal(status.state):
            self.ended.add(status.task_id)
            if len(self.ended) >= self.count:
                await driver.set_demands([])  # the work is done: ask for nothing more
                self.done.set()


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    async with LocalCluster(agents=0, work_dir=tmp_path / "cluster", master_args=FAST) as c:
        yield c


def start(tmp_path: Path, cluster: LocalCluster, config: Path, name: str = "as") -> Autoscaler:
    return Autoscaler(
        tmp_path / "state", cluster.master, tmp_path / f"{name}.log", "--config", str(config)
    )


async def agent_names(cluster: LocalCluster) -> set[str]:
    state = await cluster.state()
    return {a.info.name for a in state.agents}


async def test_pending_batch_work_adds_nodes_runs_and_they_go_after_the_unneeded_time(
    tmp_path: Path, cluster: LocalCluster
) -> None:
    config = config_file(
        tmp_path / "as.json",
        [group("small", "cpus:2;mem:1024;disk:100", 5), group("big", "cpus:8;mem:8192", 1)],
        expander="least-waste",
    )
    a = await start(tmp_path, cluster, config).wait_ready()
    try:
        batch = Batch(count=4, seconds=3)
        async with sdk.Driver(batch, sdk.FrameworkInfo(name="batch"), cluster.master) as d:
            await d.set_demands([sdk.Demand("work", 4, cpus=1, mem=64)])
            await asyncio.wait_for(batch.done.wait(), 90)
            # Least waste: 4 one-cpu tasks on two 2-cpu agents (none idle) over one 8-cpu one.
            up = await a.events("TriggeredScaleUp")
            assert len(up) == 1 and "group small: +2 nodes (small-1, small-2)" in up[0]["message"]
            assert len(batch.agents) == 2
            # The work ended and asks for nothing: after the unneeded time both go, drained
            # through the master and their processes stopped.
            await a.wait(
                lambda: _no_nodes(a, cluster), "both nodes removed from the autoscaler and master"
            )
            down = await a.events("ScaleDown")
            assert {e["subject"] for e in down} == {"small-1", "small-2"}
            m = await a.metrics()  # what an operator's Prometheus sees of it
            assert m[("corral_autoscaler_scaled_up_nodes_total", (("group", "small"),))] == 2
            assert m[("corral_autoscaler_scaled_down_nodes_total", (("group", "small"),))] == 2
            assert m[("corral_autoscaler_events_total", (("reason", "TriggeredScaleUp"),))] == 1
            ready = ("corral_autoscaler_nodes", (("group", "small"), ("phase", "ready")))
            assert m[ready] == 0 and m[("corral_autoscaler_evaluations_total", ())] >= 1
            assert (
                m[("corral_autoscaler_node_group_bound", (("bound", "max"), ("group", "big")))] == 1
            )
            table = await asyncio.to_thread(
                corral, "get", "nodegroups", "-o", "wide", "--autoscaler", a.url
            )
            assert table.returncode == 0, table.stderr
            assert "small" in table.stdout and "big" in table.stdout
            described = await asyncio.to_thread(
                corral, "describe", "nodegroup", "small", "--autoscaler", a.url
            )
            assert described.returncode == 0, described.stderr
            assert "Min/Max:" in described.stdout and "ScaleDown" in described.stdout
            unknown = await asyncio.to_thread(
                corral, "describe", "nodegroup", "nope", "--autoscaler", a.url
            )
            assert unknown.returncode == 1 and "no node group 'nope'" in unknown.stderr
    finally:
        a.stop()
        left = _agent_processes(tmp_path)
        for pid in left:
            os.killpg(pid, signal.SIGKILL)
    assert left == [], "an agent process outlived its scale-down"


async def _no_nodes(a: Autoscaler, cluster: LocalCluster) -> bool:
    return not await a.nodes() and not await agent_names(cluster)


def _agent_processes(tmp_path: Path, under: str = "state") -> list[int]:
    """Live `corral agent` processes whose work dir is under ``tmp_path / under`` (this
    test's autoscaler state; "" : any of the test's autoscalers)."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if "agent" in argv and str(tmp_path / under) in argv:
            out.append(int(pid))
    return out


async def test_a_gang_scales_up_by_all_its_members_or_not_at_all(
    tmp_path: Path, cluster: LocalCluster
) -> None:
    node = "cpus:4;mem:1024;disk:100"
    config = config_file(
        tmp_path / "as.json",
        # The priority expander prefers "pair", which could hold only 2 of the 3 members:
        # it is never chosen, and says why.
        [group("pair", node, 2, priority=10), group("trio", node, 3, priority=1)],
        expander="priority",
        # Each node is 3/4 busy: below the threshold, removable but for its gang member.
        **{"scale-down-utilization-threshold": 0.9},
    )
    a = await start(tmp_path, cluster, config).wait_ready()
    try:
        # Three members of 3 cpus each: one per 4-cpu node.
        gang = Batch(count=3, seconds=600, cpus=3, gang=True)
        info = sdk.FrameworkInfo(name="trainer")
        async with sdk.Driver(gang, info, cluster.master) as d:
            await d.set_demands([sdk.Demand("work", 3, cpus=3, mem=64, min_member=3)])
            await a.wait(lambda: _running(gang, 3), "the gang's 3 members running")
            (up,) = await a.events("TriggeredScaleUp")
            assert "group trio: +3 nodes (trio-1, trio-2, trio-3)" in up["message"]
            assert [n["group"] for n in await a.nodes()] == ["trio"] * 3
            assert "; not pair: gang needs more nodes than the group may add (2)" in up["message"]
            # While the gang holds them the nodes are not removed (a gang member on each).
            await a.wait(
                lambda: _said(a, "Unremovable", "holds a member of gang"),
                "Unremovable naming the gang",
            )
            assert len(await a.nodes()) == 3
    finally:
        a.stop()
        for pid in _agent_processes(tmp_path):
            os.killpg(pid, signal.SIGKILL)


async def _running(b: Batch, n: int) -> bool:
    return len(b.running) >= n


async def _said(a: Autoscaler, reason: str, text: str) -> bool:
    return any(text in e["message"] for e in await a.events(reason))


async def test_an_untolerated_taint_never_scales_up_and_says_why(
    tmp_path: Path, cluster: LocalCluster
) -> None:
    config = config_file(
        tmp_path / "as.json",
        [group("gpu", "cpus:4;mem:4096", 3, template={"taints": ["gpu=true:NoSchedule"]})],
    )
    a = await start(tmp_path, cluster, config).wait_ready()
    try:
        batch = Batch(count=2, seconds=1)
        async with sdk.Driver(batch, sdk.FrameworkInfo(name="batch"), cluster.master) as d:
            await d.set_demands([sdk.Demand("work", 2, cpus=1, mem=64)])
            await a.wait(
                lambda: _said(a, "NotTriggerScaleUp", "gpu: taint gpu=true:NoSchedule"),
                "NotTriggerScaleUp naming the taint",
            )
            health = await a.ok("GET", "/v1/health")
            start_evals = health["evaluations"]
            await a.wait(lambda: _evaluations_past(a, start_evals + 3), "three more scans")
            assert await a.nodes() == []
            assert await a.events("TriggeredScaleUp") == []
            # `corral explain` on the pending demand says what the autoscaler intends.
            fw = ("explain", d.framework_id, "--master", cluster.master)
            told = await asyncio.to_thread(corral, *fw, "--autoscaler", a.url)
            assert told.returncode == 0, told.stderr
            assert "autoscaler: NotTriggerScaleUp" in told.stdout, told.stdout
            assert "gpu: taint gpu=true:NoSchedule" in told.stdout, told.stdout
            as_json = await asyncio.to_thread(corral, *fw, "-o", "json", "--autoscaler", a.url)
            (demand,) = json.loads(as_json.stdout)["pending_demands"]
            assert demand["autoscaler"]["reason"] == "NotTriggerScaleUp"
            # No autoscaler named: not asked; one that does not answer: said, not fatal.
            plain = await asyncio.to_thread(corral, *fw)
            assert plain.returncode == 0 and "autoscaler:" not in plain.stdout
            gone = await asyncio.to_thread(corral, *fw, "--autoscaler", "http://127.0.0.1:9")
            assert gone.returncode == 0, gone.stderr
            assert "autoscaler: the autoscaler at http://127.0.0.1:9 did not answer" in gone.stdout
    finally:
        a.stop()


async def _evaluations_past(a: Autoscaler, n: int) -> bool:
    return int((await a.ok("GET", "/v1/health"))["evaluations"]) >= n


async def test_kill_9_and_restart_do_not_scale_up_twice(
    tmp_path: Path, cluster: LocalCluster
) -> None:
    config = config_file(tmp_path / "as.json", [group("small", "cpus:2;mem:1024;disk:100", 6)])
    a = await start(tmp_path, cluster, config).wait_ready()
    b: Autoscaler | None = None
    try:
        batch = Batch(count=4, seconds=2)
        async with sdk.Driver(batch, sdk.FrameworkInfo(name="batch"), cluster.master) as d:
            await d.set_demands([sdk.Demand("work", 4, cpus=1, mem=64)])
            made = await a.wait(lambda: _some_nodes(a), "the scale-up's nodes")
            a.kill9()  # most likely before its agents registered: they are upcoming nodes
            names = sorted(n["name"] for n in made)
            assert names == ["small-1", "small-2"]
            b = await start(tmp_path, cluster, config, "as2").wait_ready()
            await asyncio.wait_for(batch.done.wait(), 90)
            # The same two nodes ran the work: no second scale-up, before or after.
            assert sorted(n["name"] for n in await b.nodes()) in (names, [])
            assert await b.events("TriggeredScaleUp") == []
            assert (await agent_names(cluster)) <= set(names)
    finally:
        a.stop()
        if b is not None:
            b.stop()
        for pid in _agent_processes(tmp_path):
            os.killpg(pid, signal.SIGKILL)


async def _ready_nodes(a: Autoscaler) -> list[dict[str, Any]]:
    return [n for n in await a.nodes() if n["phase"] == "ready"]


async def _some_nodes(a: Autoscaler) -> list[dict[str, Any]]:
    return await a.nodes()


async def test_a_bad_config_is_one_line_and_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("node-groups:\n  - {name: g, min: 3, max: 1, template: {resources: 'cpus:1'}}\n")
    done = corral("autoscaler", "--config", str(bad), "--master", "127.0.0.1:1")
    assert done.returncode == 2, done
    assert done.stderr.strip().splitlines() == [
        f"corral autoscaler: --config {bad}: node group g: min 3 is greater than max 1"
    ], done.stderr


ACLS = {
    "version": "autoscaler-1",
    "rules": [
        {
            "name": "ops",
            "cert_roles": ["operator"],
            "operator": ["*"],
            "frameworks": {"roles": ["*"]},
        },
        # The autoscaler's own principal: what it reads and the two actions it takes.
        {
            "name": "autoscaler",
            "principals": ["autoscaler"],
            "operator": ["read", "Drain", "DeleteAgent"],
        },
        {"name": "tenants", "principals": ["bob"], "frameworks": {"roles": ["*"]}},
    ],
}


async def test_the_what_if_endpoint_over_grpc_and_http_and_its_grant(tmp_path: Path) -> None:
    acls = tmp_path / "acls.json"
    acls.write_text(json.dumps(ACLS))
    async with LocalCluster(
        agents=0, work_dir=tmp_path / "cluster", master_args=(*FAST, "--acls", str(acls))
    ) as cluster:
        await _what_if(tmp_path, cluster)


def _issue(tmp_path: Path, name: str) -> sdk_tls.TLS:
    out = tmp_path / name
    issued = corral(
        *("certs", "issue", name, "--role", "framework"),
        *("--dir", str(sdk_tls.home() / "ca"), "--out", str(out)),
    )
    assert issued.returncode == 0, issued.stderr
    return sdk_tls.TLS.from_dir(out)


async def _what_if(tmp_path: Path, cluster: LocalCluster) -> None:
    batch = Batch(count=1, seconds=1)
    async with sdk.Driver(batch, sdk.FrameworkInfo(name="batch"), cluster.master) as d:
        await d.set_demands([sdk.Demand("work", 3, cpus=2, mem=64)])
        request = operator_pb2.SimulateRequest(
            groups=[
                operator_pb2.SimulatedGroup(
                    name="small",
                    max_new=5,
                    template=common_pb2.AgentInfo(resources=common_pb2.Resources(cpus=4, mem=4096)),
                )
            ]
        )
        # The autoscaler's principal, granted read: asks and is answered.
        autoscaler = _issue(tmp_path, "autoscaler")
        async with sdk_tls.aio_channel(cluster.master, autoscaler) as ch:
            stub = operator_pb2_grpc.OperatorStub(ch)  # type: ignore[no-untyped-call]
            got = json.loads((await stub.Simulate(request, timeout=10)).result_json)
            bad = operator_pb2.SimulateRequest(
                groups=[operator_pb2.SimulatedGroup(name="x", max_new=-1)]
            )
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await stub.Simulate(bad, timeout=10)
            assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "max_new must be 0..10000, got -1" in (err.value.details() or "")
        (option,) = got["options"]
        assert (option["group"], option["nodes"], option["tasks"]) == ("small", 2, 3)
        body = {
            "groups": [
                {"name": "small", "max_new": 5, "template": {"resources": {"cpus": 4, "mem": 4096}}}
            ]
        }
        async with master_session(cluster) as http:
            async with http.post(f"{cluster.base_url}/api/v1/simulate", json=body) as r:
                assert r.status == 200
                assert (await r.json())["options"] == got["options"]
            async with http.post(f"{cluster.base_url}/api/v1/simulate", json={"groups": 3}) as r:
                assert r.status == 400
                assert "simulate" in (await r.json())["error"]
        # A tenant's certificate without the grant is refused.
        bob = _issue(tmp_path, "bob")
        async with sdk_tls.aio_channel(cluster.master, bob) as ch:
            stub = operator_pb2_grpc.OperatorStub(ch)  # type: ignore[no-untyped-call]
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await stub.Simulate(request, timeout=10)
            assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED


async def test_a_node_under_a_disruption_budget_is_not_removed_and_drain_says_why(
    tmp_path: Path,
) -> None:
    budgets = tmp_path / "budgets.json"
    budgets.write_text(
        json.dumps([{"name": "batch-2", "selector": {"framework": "batch"}, "min_available": 2}])
    )
    async with LocalCluster(
        agents=1,
        agent_resources="cpus:8;mem:8192;disk:100",
        work_dir=tmp_path / "cluster",
        master_args=(*FAST, "--disruption-budgets", str(budgets)),
        agent_args=("--simulate",),
    ) as cluster:
        await cluster.wait_for_agents(1, 30)
        (static,) = [a.info.id for a in (await cluster.state()).agents]
        async with cluster.channel() as ch:
            stub = operator_pb2_grpc.OperatorStub(ch)  # type: ignore[no-untyped-call]
            await stub.Cordon(operator_pb2.CordonRequest(agent_id=static), timeout=10)
            config = config_file(
                tmp_path / "as.json",
                [group("small", "cpus:4;mem:4096;disk:100", 2)],
                **{"scale-down-utilization-threshold": 0.9},
            )
            a = await start(tmp_path, cluster, config).wait_ready()
            try:
                batch = Batch(count=2, seconds=600)
                async with sdk.Driver(batch, sdk.FrameworkInfo(name="batch"), cluster.master) as d:
                    await d.set_demands([sdk.Demand("work", 2, cpus=1, mem=64)])
                    await a.wait(lambda: _running(batch, 2), "the 2 tasks running on a new node")
                    # The tasks may run before the autoscaler's next scan sees the node ready.
                    (node,) = await a.wait(lambda: _ready_nodes(a), "the node ready")
                    # The static agent takes offers again: small-1's tasks would fit there, but
                    # moving them would leave 0 of the 2 the budget holds.
                    await stub.Uncordon(operator_pb2.UncordonRequest(agent_id=static), timeout=10)
                    await a.wait(
                        lambda: _said(a, "Unremovable", "disruption budget batch-2"),
                        "Unremovable naming the budget",
                    )
                    evals = int((await a.ok("GET", "/v1/health"))["evaluations"])
                    await a.wait(lambda: _evaluations_past(a, evals + 6), "six more scans")
                    assert [n["name"] for n in await a.nodes()] == [node["name"]]
                    # `corral drain` on it waits for the budget, says which, and times out.
                    done = await asyncio.to_thread(
                        corral,
                        *("drain", node["agent_id"], "--timeout", "2"),
                        *("--master", cluster.master),
                    )
                    assert done.returncode == 1, done
                    assert "waiting: disruption budget batch-2 (min_available 2)" in done.stdout
                    assert "not drained after" in done.stderr
                    assert len(batch.running - batch.ended) == 2
            finally:
                a.stop()
                for pid in _agent_processes(tmp_path):
                    os.killpg(pid, signal.SIGKILL)
