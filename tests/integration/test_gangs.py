"""Gang offers on a real master with real agents over gRPC (docs/scheduling.md, "Gang
offers"): an 8-member GPU gang on 7 free GPUs holds nothing and explain says why; when the 8th
GPU frees up, all 8 are offered as one bundle; partial accepts are refused; the whole accept
launches the 8 together."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import grpc
import pytest

from corral.frameworks import sdk
from corral.frameworks.sdk.testing import LocalCluster
from corral.v1 import common_pb2
from tests.integration.corral_cli import corral
from tests.master_http import master_session

pytestmark = pytest.mark.e2e

GPU = common_pb2.FRAMEWORK_CAPABILITY_GPU_RESOURCES


def corral_wide(*args: str) -> subprocess.CompletedProcess[str]:
    return corral(*args, columns=200)  # one table row per line


class Blocker(sdk.Scheduler):
    """Takes one GPU with a long task on its first offer, then asks for nothing."""

    def __init__(self) -> None:
        self.task_id = ""
        self.running = asyncio.Event()
        self.ended = asyncio.Event()

    async def offers(self, driver: sdk.Driver, offers: list[sdk.Offer]) -> None:
        if self.task_id:
            await driver.decline(offers, refuse_seconds=3600)
            return
        t = sdk.task("hog", "sleep 600", cpus=1, mem=64, gpus=1, simulate_seconds=600)
        self.task_id = t.task_id
        await driver.launch([offers[0]], [t])
        await driver.decline(offers[1:], refuse_seconds=3600)
        await driver.suppress()

    async def status(self, driver: sdk.Driver, status: sdk.TaskStatus) -> None:
        if status.state == common_pb2.TASK_STATE_RUNNING:
            self.running.set()
        elif sdk.is_terminal(status.state):
            self.ended.set()


class Trainer(sdk.Scheduler):
    """Keeps what it is offered for the test to accept; counts its members running."""

    def __init__(self) -> None:
        self.offers_seen: list[sdk.Offer] = []
        self.offered = asyncio.Event()
        self.running: set[str] = set()
        self.all_running = asyncio.Event()

    async def offers(self, driver: sdk.Driver, offers: list[sdk.Offer]) -> None:
        self.offers_seen.extend(offers)
        self.offered.set()

    async def status(self, driver: sdk.Driver, status: sdk.TaskStatus) -> None:
        if status.state == common_pb2.TASK_STATE_RUNNING:
            self.running.add(status.task_id)
            if len(self.running) == 8:
                self.all_running.set()


async def test_an_eight_gpu_gang_waits_for_the_eighth_gpu_then_launches_whole(
    tmp_path: Path,
) -> None:
    async with LocalCluster(
        agents=8,
        agent_resources="cpus:2;mem:1024;disk:100;gpus:1",
        work_dir=tmp_path,
        master_args=("--allocation-interval", "0.2"),
        agent_args=("--simulate",),
    ) as cluster:
        await cluster.wait_for_agents(8, 60)
        blocker, trainer = Blocker(), Trainer()
        async with sdk.Driver(
            blocker, sdk.FrameworkInfo(name="blocker", capabilities=[GPU]), cluster.master
        ) as dblock:
            await asyncio.wait_for(blocker.running.wait(), 30)
            async with sdk.Driver(
                trainer, sdk.FrameworkInfo(name="trainer", capabilities=[GPU]), cluster.master
            ) as d:
                await d.set_demands([sdk.Demand("train", 8, cpus=1, mem=64, gpus=1, min_member=8)])
                # 7 free GPUs: nothing is held, and nothing offered agent by agent either, for
                # as many cycles as it took to see a bundle cut (one) several times over.
                await cluster.wait_for_cycles(7, 30)
                assert trainer.offers_seen == []
                state = await cluster.state()
                fw = next(f for f in state.frameworks if f.info.id == d.framework_id)
                assert fw.offered.gpus == 0 and fw.offered.cpus == 0
                got = await asyncio.to_thread(
                    corral_wide, "explain", d.framework_id, "-o", "json", "--master", cluster.master
                )
                assert got.returncode == 0, got.stderr
                pending = json.loads(got.stdout)["pending_demands"][0]
                assert pending["gang"] == {
                    "members": 8, "placeable": 7, "offered": "", "agents": 0,
                    "over_headroom": False,
                }  # fmt: skip
                assert pending["summary"].startswith(
                    "1/8 tasks unplaceable: insufficient gpus on 1 agent;"
                ), pending["summary"]
                # The 7 agents with room are where its members can go, not a reason it waits
                # (issue #40: "7 of 8 agents: fits" read as one).
                assert [r["reason"] for r in pending["reasons"]] == ["insufficient gpus"]
                assert pending["room"]["agents"] == 7
                assert "fits" not in pending["summary"]
                assert pending["summary"].endswith("room for a task now on 7 of 8 agents")
                table = await asyncio.to_thread(
                    corral_wide, "explain", d.framework_id, "--master", cluster.master
                )
                assert "fits" not in table.stdout and "room now: e.g. " in table.stdout, table
                async with master_session(cluster) as http:
                    url = f"{cluster.base_url}/api/v1/frameworks/{d.framework_id}/explain"
                    async with http.get(url) as r:
                        assert (await r.json())["pending_demands"][0]["summary"] == pending[
                            "summary"
                        ]

                # The 8th GPU frees up: all 8 come as one bundle, one offer per agent.
                await dblock.kill(blocker.task_id)
                await asyncio.wait_for(blocker.ended.wait(), 30)
                await asyncio.wait_for(trainer.offered.wait(), 30)
                await cluster.wait_for_cycles(2, 30)  # anything more would have come since
                bundle = list(trainer.offers_seen)
                assert len(bundle) == 8
                assert len({o.gang_id for o in bundle}) == 1 and bundle[0].gang_id
                assert len({o.agent_id for o in bundle}) == 8
                assert all(o.resources.gpus == 1 and o.resources.cpus == 1 for o in bundle)

                members = [
                    sdk.task(f"rank{i}", "train", cpus=1, mem=64, gpus=1, demand="train",
                             simulate_seconds=600)
                    for i in range(8)
                ]  # fmt: skip
                # Partial accepts: refused with the reason, and the bundle stays whole.
                with pytest.raises(sdk.CallError) as exc:
                    await d.launch(bundle[:7], sdk.place_gang(bundle[:7], members[:7]))
                assert exc.value.code is grpc.StatusCode.INVALID_ARGUMENT
                assert "uses all of them or none (this one names 7)" in exc.value.message
                with pytest.raises(sdk.CallError) as exc:
                    await d.launch(bundle, sdk.place_gang(bundle, members[:7]))
                assert exc.value.code is grpc.StatusCode.INVALID_ARGUMENT
                assert "launches all its members or none: this accept has 7 tasks" in (
                    exc.value.message
                )
                with pytest.raises(ValueError, match="each task names its agent"):
                    await d.launch(bundle, members)  # across agents the SDK wants placement

                await d.launch(bundle, sdk.place_gang(bundle, members))
                await asyncio.wait_for(trainer.all_running.wait(), 30)
                state = await cluster.state()
                fw = next(f for f in state.frameworks if f.info.id == d.framework_id)
                assert fw.demands[0].tasks == 8 and fw.demands[0].unmet == 0
