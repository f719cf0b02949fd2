"""Offers keep flowing to an unrelated framework while a hostile or buggy input stands (issue
#30, items 1-5, in the chaos suite: `make chaos`), on a real master with real agents over gRPC:
tasks of a priority class the restarted master forgot, tasks a rogue agent never ran, a demand
below the resources' granularity, a batch gang that ignores its bundles beside a serving
demand, and a preemptor toggling its demand."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import grpc
import pytest

from corral.frameworks import sdk
from corral.frameworks.sdk import tls as sdk_tls
from corral.frameworks.sdk.testing import LocalCluster
from corral.v1 import agent_pb2, agent_pb2_grpc
from corral.v1 import common_pb2 as pb
from tests.integration.test_preemption import Filler, until

pytestmark = pytest.mark.e2e

MASTER = ("--allocation-interval", "0.2")


class Offered(sdk.Scheduler):
    def __init__(self) -> None:
        self.count = 0

    async def offers(self, driver: sdk.Driver, offers: list[sdk.Offer]) -> None:
        self.count += len(offers)
        await driver.decline([o.id for o in offers], refuse_seconds=0.1)


class Ignorer(sdk.Scheduler):
    """Never answers an offer (a buggy framework): what it holds stays held until rescinded."""

    def __init__(self) -> None:
        self.bundles = 0

    async def offers(self, driver: sdk.Driver, offers: list[sdk.Offer]) -> None:
        self.bundles += sum(1 for o in offers if o.gang_id)


async def _keeps_being_offered(cluster: LocalCluster, fw: Offered, cycles: int) -> None:
    before = fw.count
    await cluster.wait_for_cycles(cycles, 30)
    await until(lambda: fw.count > before, 10)


def _events(cluster: LocalCluster, reason: str) -> list[dict[str, object]]:
    path = f"/api/v1/events?reason={reason}"
    body = json.loads(sdk_tls.http_get(path, cluster.http, cluster.tls, timeout=10))
    events: list[dict[str, object]] = body
    return events


async def test_tasks_of_a_class_the_restarted_master_forgot_do_not_stop_offers(
    tmp_path: Path,
) -> None:
    classes = tmp_path / "classes.json"
    classes.write_text(json.dumps([{"name": "gold", "value": 500}]))
    async with LocalCluster(
        agents=1,
        work_dir=tmp_path / "cluster",
        master_args=(*MASTER, "--priority-classes", str(classes)),
        agent_args=("--simulate",),
    ) as cluster:
        await cluster.wait_for_agents(1, 30)
        gold = Filler("work", 1, 64, "gold", 2)
        async with sdk.Driver(gold, sdk.FrameworkInfo(name="gold"), cluster.master) as dg:
            await dg.set_demands(gold.demand_set())
            await until(lambda: len(gold.running) == 2, 30)
        # The class came from a flag, not an operator: a master restarted without the flag
        # does not know it, and the agent re-registers reporting the tasks that name it.
        cluster.master_args = MASTER
        await cluster.restart_master()
        await cluster.wait_for_agents(1, 30)
        unrelated = Offered()
        async with sdk.Driver(unrelated, sdk.FrameworkInfo(name="unrelated"), cluster.master):
            await _keeps_being_offered(cluster, unrelated, 5)
        unknown = _events(cluster, "UnknownPriorityClass")
        assert len(unknown) == 2 and all("'gold'" in str(e["message"]) for e in unknown)


def _rogue_register() -> agent_pb2.AgentMessage:
    """An id this master (its registry lists every agent it admitted) never knew, reporting a
    running task of a class nobody defined."""
    task = pb.TaskInfo(
        task_id="rogue",
        framework_id="G",
        command=pb.CommandInfo(value="true"),
        resources=pb.Resources(cpus=1, mem=64),
        priority_class="nosuch",
    )
    running = pb.TaskStatus(task_id="rogue", framework_id="G", state=pb.TASK_STATE_RUNNING)
    info = pb.AgentInfo(id="X-rogue", hostname="rogue", resources=pb.Resources(cpus=2, mem=512))
    register = agent_pb2.Register(info=info, tasks=[task], task_statuses=[running])
    return agent_pb2.AgentMessage(register=register)


async def test_a_rogue_agent_id_is_refused_and_offers_go_on(tmp_path: Path) -> None:
    async with LocalCluster(
        agents=1, work_dir=tmp_path, master_args=MASTER, agent_args=("--simulate",)
    ) as cluster:
        await cluster.wait_for_agents(1, 30)
        unrelated = Offered()
        async with sdk.Driver(unrelated, sdk.FrameworkInfo(name="unrelated"), cluster.master):
            await until(lambda: unrelated.count > 0, 20)
            async with cluster.channel() as channel:
                call = agent_pb2_grpc.AgentServiceStub(channel).Connect()
                await call.write(_rogue_register())
                with pytest.raises(grpc.aio.AioRpcError) as refused:
                    async with asyncio.timeout(10):
                        await call.read()
                assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
                assert "X-rogue" in str(refused.value.details())
            await _keeps_being_offered(cluster, unrelated, 5)
        state = await cluster.state()
        assert not any(t.info.task_id == "rogue" for t in state.tasks)
        assert not any(a.info.id == "X-rogue" for a in state.agents)


async def test_a_demand_below_the_granularity_is_refused_and_offers_go_on(tmp_path: Path) -> None:
    async with LocalCluster(
        agents=1, work_dir=tmp_path, master_args=MASTER, agent_args=("--simulate",)
    ) as cluster:
        await cluster.wait_for_agents(1, 30)
        # The hostile framework declines what it is offered: its demand is the input under
        # test. (Holding the one agent's offer would starve the other framework for the
        # offer timeout, 60 s, whatever the demand: the order of the first offer decided it.)
        hostile, unrelated = Offered(), Offered()
        async with (
            sdk.Driver(hostile, sdk.FrameworkInfo(name="gang"), cluster.master) as dh,
            sdk.Driver(unrelated, sdk.FrameworkInfo(name="unrelated"), cluster.master),
        ):
            tiny = sdk.Demand("g", 100_000, cpus=1e-300, mem=0, min_member=100_000)
            with pytest.raises(sdk.CallError) as refused:
                await dh.set_demands([tiny])
            assert "granularity" in str(refused.value)
            await _keeps_being_offered(cluster, unrelated, 5)


async def test_a_batch_gang_ignoring_its_bundles_does_not_hold_back_serving(
    tmp_path: Path,
) -> None:
    async with LocalCluster(
        agents=0, work_dir=tmp_path, master_args=MASTER, agent_args=("--simulate",)
    ) as cluster:
        for i in range(2):
            await cluster.add_agent(f"agent-{i}", "cpus:8;mem:4096;disk:100")
        await cluster.wait_for_agents(2, 30)
        gang, serving = Ignorer(), Filler("web", 1, 64, "serving", 8)
        async with sdk.Driver(gang, sdk.FrameworkInfo(name="batch-gang"), cluster.master) as dg:
            bundle = sdk.Demand("train", 16, cpus=1, mem=64, min_member=16, priority_class="batch")
            await dg.set_demands([bundle])
            await until(lambda: gang.bundles > 0, 20)  # it holds every cpu, and never answers
            async with sdk.Driver(serving, sdk.FrameworkInfo(name="serving"), cluster.master) as ds:
                await ds.set_demands(serving.demand_set())
                await until(lambda: len(serving.running) == 8, 30)


async def test_toggling_a_demand_kills_a_bounded_number_of_tasks(tmp_path: Path) -> None:
    async with LocalCluster(
        agents=0,
        work_dir=tmp_path,
        master_args=(*MASTER, "--preemption-nomination", "1"),
        agent_args=("--simulate",),
    ) as cluster:
        for i in range(2):
            await cluster.add_agent(f"agent-{i}", "cpus:4;mem:1024;disk:100")
        await cluster.wait_for_agents(2, 30)
        batch = Filler("work", 1, 64, "batch", 8)
        toggler = Ignorer()
        async with sdk.Driver(batch, sdk.FrameworkInfo(name="batch"), cluster.master) as db:
            await db.set_demands(batch.demand_set())
            await until(lambda: len(batch.running) == 8, 30)
            async with sdk.Driver(toggler, sdk.FrameworkInfo(name="toggler"), cluster.master) as dt:
                web = [sdk.Demand("web", 4, cpus=1, mem=64, priority_class="serving")]
                for _ in range(6):  # 12 s: set, 1 s, withdraw, 1 s
                    await dt.set_demands(web)
                    await asyncio.sleep(1.0)
                    await dt.set_demands([])
                    await asyncio.sleep(1.0)
        preempted = [s for s in batch.ended if s.reason == pb.TASK_REASON_PREEMPTED]
        # One nomination of 4, unused: the demand backs off 30 s. Unpaced, every set of it
        # preempted again (24 here).
        assert 0 < len(preempted) <= 4, f"{len(preempted)} tasks preempted by a toggling demand"
