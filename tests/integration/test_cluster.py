"""The foundation end to end: a real master and two real agents as processes, an SDK framework
over 127.0.0.1 launching real `sh -c` tasks; kills; an agent SIGKILLed mid-run."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from corral.frameworks import sdk
from corral.frameworks.sdk.testing import LocalCluster
from tests.integration.recording import RecordingScheduler

pytestmark = pytest.mark.e2e


class Recorder(RecordingScheduler):
    """Launches what is queued on the offers it gets; records every status and rescind."""

    def __init__(self) -> None:
        super().__init__()
        self.queue: list[sdk.TaskInfo] = []
        self.rescinded_ids: list[str] = []
        self.offers_seen: dict[str, str] = {}  # offer id -> agent id
        self.only_agent: str | None = None
        self.hold_agent: str | None = None  # offers of this agent are kept, not answered
        self.held: list[str] = []

    async def offers(self, driver: sdk.Driver, offers: list[sdk.Offer]) -> None:
        for offer in offers:
            self.offers_seen[offer.id] = offer.agent_id
            if offer.agent_id == self.hold_agent:
                self.held.append(offer.id)
                self.changed.set()
                continue
            if self.only_agent is not None and offer.agent_id != self.only_agent:
                await driver.decline([offer.id], refuse_seconds=0.5)
                continue
            packer = sdk.OfferPacker(offer)
            self.queue = packer.add_all(self.queue)
            await driver.launch([offer], packer.tasks, refuse_seconds=0)

    async def rescinded(self, driver: sdk.Driver, offer_ids: Any) -> None:
        self.rescinded_ids += list(offer_ids)
        self.changed.set()


def _state(status: sdk.TaskStatus | None) -> str:
    return sdk.state_name(status.state) if status is not None else "none"


async def test_tasks_run_kill_and_agent_loss(tmp_path: Any) -> None:
    async with LocalCluster(
        agents=2,
        agent_resources="cpus:4;mem:2048;disk:1000;ports:{ports}",
        work_dir=tmp_path,
        master_args=("--allocation-interval", "0.2", "--agent-timeout", "3"),
    ) as cluster:
        # Each agent offers a port range of its own: they share 127.0.0.1.
        state = await cluster.state()
        offered = sorted((r.begin, r.end) for a in state.agents for r in a.info.resources.ports)
        assert offered == sorted(cluster.port_range(f"agent-{i}") for i in range(2))
        assert offered[0][1] < offered[1][0], offered
        rec = Recorder()
        info = sdk.FrameworkInfo(name="integration", role="*")
        async with sdk.Driver(rec, info, cluster.master) as driver:
            # 1. Twenty real processes with known exit codes.
            expected = {f"t{i}": i % 4 for i in range(20)}
            rec.queue = [
                sdk.task(
                    name,
                    f'echo "out $CORRAL_TASK_ID"; exit {code}',
                    cpus=0.1,
                    mem=16,
                    task_id=name,
                )
                for name, code in expected.items()
            ]
            await rec.until(
                "20 tasks to end",
                lambda: (
                    all(sdk.is_terminal(s.state) for s in map(rec.last, expected) if s)
                    and all(rec.last(t) for t in expected)
                ),
            )
            for name, code in expected.items():
                final = rec.last(name)
                assert final is not None
                want = "FINISHED" if code == 0 else "FAILED"
                assert _state(final) == want, f"{name}: {final}"
                assert final.exit_code == code, f"{name}: exit {final.exit_code}, want {code}"
                states = [_state(s) for s in rec.statuses[name]]
                assert "RUNNING" in states, f"{name} never reported RUNNING: {states}"

            # 2. A long task killed by the framework.
            rec.queue = [sdk.task("sleeper", "sleep 300", cpus=0.1, mem=16, task_id="sleeper")]
            await rec.until("sleeper RUNNING", lambda: _state(rec.last("sleeper")) == "RUNNING")
            sleeper_agent = rec.last("sleeper").agent_id  # type: ignore[union-attr]
            await driver.kill("sleeper", sleeper_agent)
            await rec.until("sleeper KILLED", lambda: _state(rec.last("sleeper")) == "KILLED")

            # 3. SIGKILL one agent while it runs a task and holds an offer.
            state = await cluster.state()
            names = {a.info.id: f"agent-{i}" for i, a in enumerate(state.agents)}
            assert len(names) == 2
            victim = next(iter(names))
            survivor = next(a for a in names if a != victim)
            rec.only_agent = victim
            rec.queue = [sdk.task("doomed", "sleep 300", cpus=0.1, mem=16, task_id="doomed")]
            await rec.until("doomed RUNNING", lambda: _state(rec.last("doomed")) == "RUNNING")
            assert rec.last("doomed").agent_id == victim  # type: ignore[union-attr]
            rec.hold_agent = victim
            await rec.until("an offer from the victim to hold", lambda: bool(rec.held))
            victim_proc = await _agent_process_named(cluster, victim)
            await cluster.kill(victim_proc)
            await rec.until(
                "the victim's held offers to be rescinded",
                lambda: set(rec.held) <= set(rec.rescinded_ids),
            )
            await rec.until(
                "doomed reported LOST",
                lambda: _state(rec.last("doomed")) in {"LOST", "UNREACHABLE"},
            )
            assert rec.last("doomed").reason != 0  # type: ignore[union-attr]

            # 4. The other agent keeps working.
            rec.only_agent = survivor
            rec.queue = [sdk.task("after", "exit 0", cpus=0.1, mem=16, task_id="after")]
            await rec.until("after FINISHED", lambda: _state(rec.last("after")) == "FINISHED")
            assert rec.last("after").agent_id == survivor  # type: ignore[union-attr]
            state = await cluster.state()
            active = {a.info.id for a in state.agents if a.active}
            assert active == {survivor}
            await driver.teardown()


async def _agent_process_named(cluster: LocalCluster, agent_id: str) -> str:
    """Which LocalCluster process is the agent with this id (ids are assigned by the master)."""
    for name in cluster.processes:
        if not name.startswith("agent-"):
            continue
        checkpoint = cluster.work_dir / name / "agent_id"
        if checkpoint.exists() and checkpoint.read_text().split()[0] == agent_id:
            return name
    raise AssertionError(f"no agent process has id {agent_id}\n{cluster.logs()}")


async def test_wait_for_cycles_waits_for_the_masters_cycles(tmp_path: Any) -> None:
    async with LocalCluster(
        agents=0, work_dir=tmp_path, master_args=("--allocation-interval", "0.2")
    ) as cluster:
        loop = asyncio.get_running_loop()
        before, started = await cluster.allocation_cycles(), loop.time()
        await cluster.wait_for_cycles(3, 30)
        # Three more cycles are at least two intervals apart (0.1 s while pacing would hold
        # offers back, 0.2 s otherwise): a helper that returned early would be faster.
        assert loop.time() - started >= 0.2
        assert await cluster.allocation_cycles() >= before + 3
        with pytest.raises(TimeoutError, match=r"allocation cycles in 0\.3 s"):
            await cluster.wait_for_cycles(10_000, 0.3)
