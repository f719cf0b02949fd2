"""`corral get` and the master's HTTP state on a real master, as a new user meets them: ids
whole when piped (so they paste into `corral explain`), framework states, placement rules."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from corral.frameworks import sdk
from corral.frameworks.sdk.testing import LocalCluster
from corral.v1 import common_pb2 as pb
from tests.integration.corral_cli import corral
from tests.master_http import master_session

pytestmark = pytest.mark.e2e


async def get(master: str, *args: str) -> list[list[str]]:
    """The table's rows (header included), split on whitespace."""
    done = await asyncio.to_thread(corral, "get", *args, "--master", master)
    assert done.returncode == 0, done.stderr
    return [line.split() for line in done.stdout.splitlines()]


class Holder(sdk.Scheduler):
    """Declines for an hour: the framework stays, holding nothing."""

    def __init__(self) -> None:
        self.offered = asyncio.Event()

    async def offers(self, driver: sdk.Driver, offers: list[sdk.Offer]) -> None:
        await driver.decline(offers, refuse_seconds=3600)
        self.offered.set()


async def test_get_prints_whole_ids_states_and_constraints(tmp_path: Path) -> None:
    async with LocalCluster(
        agents=1,
        work_dir=tmp_path,
        master_args=("--allocation-interval", "0.2"),
        agent_args=("--attributes", "zone:a;rack:r1"),
    ) as cluster:
        zones = pb.AttributeConstraint(
            attribute="zone", operator=pb.CONSTRAINT_OPERATOR_IN, values=["a", "b"]
        )
        info = sdk.FrameworkInfo(
            name="constrained-framework-with-a-long-name", role="*", offer_constraints=[zones]
        )
        holder = Holder()
        async with sdk.Driver(holder, info, cluster.master) as driver:
            await asyncio.wait_for(holder.offered.wait(), 20)
            fid = driver.framework_id

            header, row = await get(cluster.master, "frameworks")
            assert header[:4] == ["ID", "NAME", "ROLE", "STATE"]
            assert row[:4] == [fid, info.name, "*", "subscribed"]
            header, row = await get(cluster.master, "frameworks", "-o", "wide")
            assert header[-4:] == ["OFFERED", "CONSTRAINTS", "TOLERATIONS", "DEMANDS"]
            assert "zone in (a,b)" in " ".join(row)
            (header, agent) = await get(cluster.master, "agents")
            shown = dict(zip(header, agent, strict=False))
            assert shown["STATE"] == "active" and "rack=r1,zone=a" in agent
            assert shown["ZONE"] == "a" and shown["NAME"] == "agent-0"

            # The id as printed is the id: it pastes into the next command.
            why = await asyncio.to_thread(corral, "explain", row[0], "--master", cluster.master)
            assert why.returncode == 0, why.stderr

            async with master_session(cluster) as http:
                async with http.get(f"{cluster.base_url}/api/v1/state") as r:
                    state = await r.json()
                async with http.get(f"{cluster.base_url}/plain") as r:
                    page = await r.text()
            (framework,) = state["frameworks"]
            assert framework["offer_constraints"] == ["zone in (a,b)"]
            assert "<td>rack=r1, zone=a</td>" in page
            await driver.teardown()

        _, row = await get(cluster.master, "frameworks")
        assert row[:4] == [fid, info.name, "*", "removed"]


class OneTask(sdk.Scheduler):
    """A demand of one task in ``cls``, launched on the first offer; then it wants nothing."""

    def __init__(self, name: str, cls: str) -> None:
        self.name, self.cls = name, cls
        self.running = asyncio.Event()
        self.launched = False

    async def subscribed(self, driver: sdk.Driver, framework_id: str) -> None:
        await driver.set_demands(
            [sdk.Demand(self.name, 1, cpus=0.5, mem=32, priority_class=self.cls)]
        )

    async def offers(self, driver: sdk.Driver, offers: list[sdk.Offer]) -> None:
        if self.launched:
            await driver.decline(offers, refuse_seconds=1)
            return
        self.launched = True
        task = sdk.task(
            self.name, "sleep 600", cpus=0.5, mem=32, demand=self.name,
            priority_class=self.cls, simulate_seconds=600,
        )  # fmt: skip
        await driver.launch(offers[:1], [task])
        if offers[1:]:
            await driver.decline(offers[1:], refuse_seconds=1)

    async def status(self, driver: sdk.Driver, status: sdk.TaskStatus) -> None:
        if status.state == pb.TASK_STATE_RUNNING:
            self.running.set()


async def test_a_frameworks_priority_is_its_class_once_its_demands_are_met(tmp_path: Path) -> None:
    """Issue #40: PRIORITY showed 0 for a batch (-100) and a serving (1000) framework once their
    demands were met (their level in the DRF order, the default's when they want nothing)."""
    async with LocalCluster(
        agents=1,
        work_dir=tmp_path,
        master_args=("--allocation-interval", "0.2"),
        agent_args=("--simulate",),
    ) as cluster:
        batch, web = OneTask("crunch", "batch"), OneTask("web", "serving")
        async with (
            sdk.Driver(batch, sdk.FrameworkInfo(name="batchy"), cluster.master) as db,
            sdk.Driver(web, sdk.FrameworkInfo(name="webby"), cluster.master) as dw,
        ):
            await asyncio.wait_for(batch.running.wait(), 30)
            await asyncio.wait_for(web.running.wait(), 30)
            header, *rows = await get(cluster.master, "frameworks")
            shown = {row[1]: dict(zip(header, row, strict=False)) for row in rows}
            assert (shown["batchy"]["PRIORITY"], shown["batchy"]["UNMET"]) == ("-100", "0")
            assert (shown["webby"]["PRIORITY"], shown["webby"]["UNMET"]) == ("1000", "0")
            async with master_session(cluster) as http:
                async with http.get(f"{cluster.base_url}/api/v1/state") as r:
                    state = {f["name"]: f for f in (await r.json())["frameworks"]}
                async with http.get(f"{cluster.base_url}/api/v1/frameworks") as r:
                    ui = {f["name"]: f for f in (await r.json())["items"]}
            # The JSON says both: the class's value, and the level it is offered at now.
            assert state["batchy"]["class_priority"] == -100 and state["batchy"]["priority"] == 0
            assert state["webby"]["class_priority"] == 1000
            assert (ui["batchy"]["priority"], ui["webby"]["priority"]) == (-100, 1000)
            await db.teardown()
            await dw.teardown()
