"""Demands and priority classes on a real master over gRPC (docs/scheduling.md): the flag, the
Operator API, HTTP and the CLI; a framework sets demands through the SDK; a higher-priority
demand is offered the agent first; a satisfied framework is offered nothing; bad demands are
INVALID_ARGUMENT with the reason."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import grpc
import pytest

from corral.frameworks import sdk
from corral.frameworks.sdk.testing import LocalCluster
from corral.v1 import common_pb2, operator_pb2, operator_pb2_grpc
from tests.integration.corral_cli import corral
from tests.master_http import master_session

pytestmark = pytest.mark.e2e


def corral_wide(*args: str) -> subprocess.CompletedProcess[str]:
    return corral(*args, columns=200)  # one table row per line


class Journal(sdk.Scheduler):
    """Writes (name, agent) to a shared journal per offer, and declines for an hour."""

    def __init__(self, name: str, journal: list[tuple[str, str]]) -> None:
        self.name, self.journal = name, journal
        self.offered = asyncio.Event()

    async def offers(self, driver: sdk.Driver, offers: list[sdk.Offer]) -> None:
        self.journal.extend((self.name, o.agent_id) for o in offers)
        await driver.decline([o.id for o in offers], refuse_seconds=3600)
        self.offered.set()


async def test_the_higher_priority_demand_is_offered_first_and_bad_demands_are_refused(
    tmp_path: Path,
) -> None:
    classes = tmp_path / "classes.json"
    classes.write_text(json.dumps([{"name": "gold", "value": 5000, "preemption_policy": "Never"}]))
    async with LocalCluster(
        agents=0,
        work_dir=tmp_path,
        master_args=("--allocation-interval", "0.2", "--priority-classes", str(classes)),
    ) as cluster:
        journal: list[tuple[str, str]] = []
        low, high = Journal("low", journal), Journal("high", journal)
        async with (
            sdk.Driver(low, sdk.FrameworkInfo(name="low"), cluster.master) as dlow,
            sdk.Driver(high, sdk.FrameworkInfo(name="high"), cluster.master) as dhigh,
        ):
            # "low" subscribed first: by DRF's tie-break alone it would be offered first.
            await dlow.set_demands(
                [sdk.Demand("crunch", 4, cpus=1, mem=64, priority_class="batch")]
            )
            await dhigh.set_demands([sdk.Demand("web", 2, cpus=1, mem=64, priority_class="gold")])

            # Bad demands: INVALID_ARGUMENT naming the problem, and nothing changes.
            for demands, reason in [
                ([sdk.Demand("web", 2, cpus=1, mem=64, priority_class="platinum")],
                 "unknown priority class 'platinum'"),
                ([sdk.Demand("a", 1, cpus=1, mem=1), sdk.Demand("a", 1, cpus=1, mem=1)],
                 "demand 'a' appears twice"),
                ([sdk.Demand("a", 2, cpus=0, mem=0, min_member=2)], "a gang's task shape asks"),
            ]:  # fmt: skip
                with pytest.raises(sdk.CallError) as exc:
                    await dhigh.set_demands(demands)
                assert exc.value.code is grpc.StatusCode.INVALID_ARGUMENT
                assert reason in exc.value.message
            state = await cluster.state()
            by_name = {f.info.name: f for f in state.frameworks}
            assert [d.demand.name for d in by_name["high"].demands] == ["web"]
            assert by_name["high"].priority == 5000 and by_name["low"].priority == -100

            # The agent joins only now, so both demands are in place before any offer.
            await cluster.add_agent("agent-0", "cpus:2;mem:1024;disk:100")
            await cluster.wait_for_agents(1, 30)
            await asyncio.wait_for(low.offered.wait(), 20)  # after high declined it
            assert journal[0][0] == "high"
            assert [name for name, _ in journal].index("low") > 0

            # explain over the CLI and HTTP: the same records for the pending demand.
            got = await asyncio.to_thread(
                corral_wide, "explain", dlow.framework_id, "-o", "json", "--master", cluster.master
            )
            assert got.returncode == 0, got.stderr
            cli_view = json.loads(got.stdout)
            async with master_session(cluster) as http:
                url = f"{cluster.base_url}/api/v1/frameworks/{dlow.framework_id}/explain"
                async with http.get(url) as r:
                    http_view = await r.json()
            pending = cli_view["pending_demands"][0]
            assert pending["name"] == "crunch" and pending["unmet"] == 4
            # It declined the agent for an hour: its refuse filter is what holds it back now.
            assert pending["summary"] == "1 of 1 agents: refuse filter"
            assert cli_view["pending_demands"] == http_view["pending_demands"]
            assert set(cli_view) == set(http_view)
            assert cli_view["priority"] == http_view["priority"] == -100


class Launcher(sdk.Scheduler):
    """Launches one long task for its demand on the first offer, declines everything after."""

    def __init__(self) -> None:
        self.offers_seen = 0
        self.running = asyncio.Event()

    async def offers(self, driver: sdk.Driver, offers: list[sdk.Offer]) -> None:
        self.offers_seen += len(offers)
        if self.running.is_set() or self.offers_seen > len(offers):
            await driver.decline([o.id for o in offers], refuse_seconds=0.2)
            return
        task = sdk.task("web", "sleep 60", cpus=0.5, mem=32, demand="web", simulate_seconds=60)
        await driver.launch([offers[0]], [task])
        await driver.decline([o.id for o in offers[1:]])

    async def status(self, driver: sdk.Driver, status: sdk.TaskStatus) -> None:
        if status.state == common_pb2.TASK_STATE_RUNNING:
            self.running.set()


async def test_a_satisfied_framework_receives_no_offers(tmp_path: Path) -> None:
    async with LocalCluster(
        agents=1,
        work_dir=tmp_path,
        master_args=("--allocation-interval", "0.1"),
        agent_args=("--simulate",),
    ) as cluster:
        scheduler = Launcher()
        async with sdk.Driver(scheduler, sdk.FrameworkInfo(name="web"), cluster.master) as d:
            await d.set_demands([sdk.Demand("web", 1, cpus=0.5, mem=32)])
            await asyncio.wait_for(scheduler.running.wait(), 30)
            seen = scheduler.offers_seen
            # Declines above use a 0.2 s filter: a framework that still wanted something would
            # be offered the agent's rest every few of these cycles.
            await cluster.wait_for_cycles(15, 30)
            assert scheduler.offers_seen == seen
            state = await cluster.state()
            fw = next(f for f in state.frameworks if f.info.id == d.framework_id)
            assert fw.demands[0].tasks == 1 and fw.demands[0].unmet == 0
            # More wanted: offers come again.
            await d.set_demands([sdk.Demand("web", 2, cpus=0.5, mem=32)])
            for _ in range(50):
                if scheduler.offers_seen > seen:
                    break
                await asyncio.sleep(0.1)
            assert scheduler.offers_seen > seen


async def test_priority_classes_over_grpc_http_and_cli(tmp_path: Path) -> None:
    async with LocalCluster(agents=0, work_dir=tmp_path) as cluster:
        master, base = cluster.master, f"{cluster.base_url}"
        got = await asyncio.to_thread(corral_wide, "get", "priorityclasses", "--master", master)
        assert got.returncode == 0, got.stderr
        lines = got.stdout.splitlines()
        assert lines[0].split() == ["NAME", "VALUE", "PREEMPTION", "DEFAULT", "DESCRIPTION"]
        assert [line.split()[0] for line in lines[1:]] == ["system", "serving", "default", "batch"]

        async with cluster.channel() as channel:
            stub = operator_pb2_grpc.OperatorStub(channel)
            gold = common_pb2.PriorityClass(name="gold", value=5000, global_default=True)
            await stub.SetPriorityClass(operator_pb2.SetPriorityClassRequest(priority_class=gold))
            bad = common_pb2.PriorityClass(name="x", value=5, preemption_policy="Sometimes")
            with pytest.raises(grpc.aio.AioRpcError) as exc:
                await stub.SetPriorityClass(
                    operator_pb2.SetPriorityClassRequest(priority_class=bad)
                )
            assert exc.value.code() is grpc.StatusCode.INVALID_ARGUMENT
            assert "unknown preemption_policy 'Sometimes'" in (exc.value.details() or "")
            with pytest.raises(grpc.aio.AioRpcError) as exc:
                await stub.DeletePriorityClass(operator_pb2.DeletePriorityClassRequest(name="gold"))
            assert exc.value.code() is grpc.StatusCode.FAILED_PRECONDITION
            await stub.DeletePriorityClass(operator_pb2.DeletePriorityClassRequest(name="batch"))

        async with master_session(cluster) as http:
            async with http.put(f"{base}/api/v1/priorityclasses/x", json={"value": "high"}) as r:
                assert r.status == 400
                assert "must be an integer" in (await r.json())["error"]
            async with http.put(f"{base}/api/v1/priorityclasses/x", json={"value": -5}) as r:
                assert r.status == 200, await r.text()
            async with http.get(f"{base}/api/v1/priorityclasses") as r:
                names = [(c["name"], c["global_default"]) for c in await r.json()]
        assert names == [
            ("system", False), ("gold", True), ("serving", False), ("default", False), ("x", False)
        ]  # fmt: skip
        got = await asyncio.to_thread(
            corral_wide, "get", "priorityclasses", "-o", "json", "--master", master
        )
        assert [c["name"] for c in json.loads(got.stdout)] == [n for n, _ in names]
