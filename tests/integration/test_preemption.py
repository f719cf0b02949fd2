"""Preemption on a real master with real agents over gRPC (docs/scheduling.md, Preemption):
agents full of batch tasks, a serving demand arrives; exactly enough batch tasks are killed
with reason PREEMPTED, the serving tasks run, and a third framework of higher priority that
never preempts does not get the room the victims freed."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from corral.frameworks import sdk
from corral.frameworks.sdk.testing import LocalCluster
from corral.v1 import common_pb2 as pb

pytestmark = pytest.mark.e2e


class Filler(sdk.Scheduler):
    """Launches tasks of one shape for its demand into every offer, as many as fit and are
    unmet; declines the rest briefly so it is offered again soon."""

    def __init__(self, demand: str, cpus: float, mem: float, klass: str, count: int) -> None:
        self.demand, self.cpus, self.mem, self.klass, self.count = demand, cpus, mem, klass, count
        self.launched: list[tuple[str, str]] = []  # (task id, agent id)
        self.running: set[str] = set()
        self.ended: list[pb.TaskStatus] = []

    async def offers(self, driver: sdk.Driver, offers: list[sdk.Offer]) -> None:
        for offer in offers:
            want = self.count - (len(self.launched) - len(self.ended))
            fit = int(min(offer.resources.cpus / self.cpus, offer.resources.mem / self.mem))
            n = max(0, min(want, fit))
            if n == 0:
                await driver.decline([offer.id], refuse_seconds=0.2)
                continue
            tasks = []
            for _ in range(n):
                task_id = f"{self.demand}-{len(self.launched)}"
                self.launched.append((task_id, offer.agent_id))
                tasks.append(
                    sdk.task(
                        task_id,
                        "sleep 600",
                        cpus=self.cpus,
                        mem=self.mem,
                        demand=self.demand,
                        priority_class=self.klass,
                        simulate_seconds=600,
                    )
                )
            await driver.launch([offer], tasks, refuse_seconds=0.2)

    async def status(self, driver: sdk.Driver, status: sdk.TaskStatus) -> None:
        if status.state == pb.TASK_STATE_RUNNING:
            self.running.add(status.task_id)
        elif status.state in (
            pb.TASK_STATE_KILLED,
            pb.TASK_STATE_FAILED,
            pb.TASK_STATE_LOST,
            pb.TASK_STATE_FINISHED,
        ):
            self.running.discard(status.task_id)
            self.ended.append(status)

    def demand_set(self) -> list[sdk.Demand]:
        return [
            sdk.Demand(self.demand, self.count, cpus=self.cpus, mem=self.mem,
                       priority_class=self.klass)
        ]  # fmt: skip


async def until(check: object, timeout: float) -> None:
    async def poll() -> None:
        while not check():  # type: ignore[operator]
            await asyncio.sleep(0.05)

    await asyncio.wait_for(poll(), timeout)


async def test_serving_preempts_exactly_enough_batch_tasks_and_keeps_the_room(
    tmp_path: Path,
) -> None:
    classes = tmp_path / "classes.json"
    # More important than serving but never preempting: without nomination it would be
    # offered the freed room first (a higher priority pass), as soon as a victim ends.
    classes.write_text(json.dumps([{"name": "rush", "value": 1500, "preemption_policy": "Never"}]))
    async with LocalCluster(
        agents=0,
        work_dir=tmp_path,
        master_args=("--allocation-interval", "0.2", "--priority-classes", str(classes)),
        agent_args=("--simulate",),
    ) as cluster:
        for i in range(2):
            await cluster.add_agent(f"agent-{i}", "cpus:4;mem:1024;disk:100")
        await cluster.wait_for_agents(2, 30)
        batch = Filler("work", 1, 64, "batch", 8)
        rush = Filler("grab", 1, 64, "rush", 8)
        serving = Filler("web", 2, 128, "serving", 3)
        async with sdk.Driver(batch, sdk.FrameworkInfo(name="batch"), cluster.master) as db:
            await db.set_demands(batch.demand_set())
            await until(lambda: len(batch.running) == 8, 30)
            async with (
                sdk.Driver(rush, sdk.FrameworkInfo(name="rush"), cluster.master) as dr,
                sdk.Driver(serving, sdk.FrameworkInfo(name="serving"), cluster.master) as ds,
            ):
                await dr.set_demands(rush.demand_set())
                await cluster.wait_for_cycles(3, 30)  # rush is offered the leftovers: no room
                await ds.set_demands(serving.demand_set())
                await until(lambda: len(serving.running) == 3, 30)
                await cluster.wait_for_cycles(5, 30)  # a few more cycles: no more victims

                # 3 tasks of 2 cpus on agents full of 1-cpu tasks: 6 victims, no more.
                assert len(batch.ended) == 6
                for st in batch.ended:
                    assert st.state == pb.TASK_STATE_KILLED
                    assert st.reason == pb.TASK_REASON_PREEMPTED
                    assert ds.framework_id in st.message and "demand web" in st.message
                assert len(batch.running) == 2
                assert rush.launched == []  # the freed room went to serving alone
                assert len(serving.launched) == 3
