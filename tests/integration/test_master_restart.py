"""A master that dies loses nothing (real master, agents and framework as processes on
127.0.0.1): its registry brings back the frameworks with their failover timeouts, the agents
with their secrets and the operators' weights; an agent lost while the master was down has its
tasks reported LOST to the framework within the re-registration timeout; and when that agent
comes back late, its task is killed, not run beside its replacement."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from corral.agent.connection import ReconnectBackoff
from corral.frameworks import sdk
from corral.frameworks.sdk.testing import LocalCluster
from corral.v1.common_pb2 import TaskReason
from tests.integration.recording import WAIT, RecordingScheduler

CORRAL = (sys.executable, "-m", "corral.cli.main")
# Long enough for the surviving agent to come back: its stream waits up to the reconnect
# backoff's maximum between tries, and gRPC's channel up to as long again (connection.py), so
# a shorter timeout declares a live agent lost (t0 LOST: 1 run in 7 on a loaded machine).
REREGISTER_TIMEOUT = 2 * ReconnectBackoff().maximum + 1.0


class OnePerAgent(RecordingScheduler):
    """Launches one long task on each of ``agents`` agents, then declines everything."""

    def __init__(self, agents: int) -> None:
        super().__init__()
        self.agents = agents
        self.placed: dict[str, str] = {}  # agent id -> task name (t0, t1, ...)
        self.ids: dict[str, str] = {}  # task name -> task id

    async def offers(self, driver: sdk.Driver, offers: list[sdk.Offer]) -> None:
        for offer in offers:
            if len(self.placed) < self.agents and offer.agent_id not in self.placed:
                name = f"t{len(self.placed)}"
                task = sdk.task(name, "sleep 600", cpus=1, mem=32)
                self.placed[offer.agent_id] = name
                self.ids[name] = task.task_id
                await driver.launch([offer], [task])
            else:
                await driver.decline([offer], refuse_seconds=3600)


async def run_cli(*args: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        *CORRAL, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    out, _ = await proc.communicate()
    return proc.returncode or 0, out.decode()


def state_of(scheduler: OnePerAgent, name: str) -> str:
    last = scheduler.last(scheduler.ids.get(name, ""))
    return "" if last is None else sdk.state_name(last.state)


async def test_a_master_restart_loses_neither_frameworks_nor_the_fate_of_tasks() -> None:
    master_args = (
        "--failover-timeout",
        "1",  # the default for frameworks asking 0: "web" asks 600, which must survive
        "--agent-reregister-timeout",
        str(REREGISTER_TIMEOUT),
        "--allocation-interval",
        "0.2",
    )
    async with LocalCluster(agents=2, corral=CORRAL, master_args=master_args) as cluster:
        code, out = await run_cli("set", "weight", "web", "3", "--master", cluster.master)
        assert code == 0, out
        scheduler = OnePerAgent(agents=2)
        info = sdk.FrameworkInfo(name="web", role="web", failover_timeout=600)
        backoff = sdk.Backoff(initial=0.05, maximum=0.5)
        async with sdk.Driver(scheduler, info, cluster.master, backoff=backoff) as driver:
            await scheduler.until(
                "both tasks RUNNING",
                lambda: state_of(scheduler, "t0") == state_of(scheduler, "t1") == "RUNNING",
            )
            t0, t1 = scheduler.ids["t0"], scheduler.ids["t1"]
            framework_id = driver.framework_id
            lost_agent = next(a for a, t in scheduler.placed.items() if t == "t1")
            lost_name = await agent_name(cluster, lost_agent)

            await cluster.kill("master")
            await cluster.kill(lost_name)  # gone while the master is down (its task lives on)
            await cluster.restart_master(kill=False)

            # The framework re-subscribes, asks about its tasks, and hears that t1 is LOST once
            # its agent has not come back within the re-registration timeout.
            await scheduler.until(
                "t1 reported LOST",
                lambda: state_of(scheduler, "t1") == "LOST",
                timeout=WAIT + REREGISTER_TIMEOUT,
            )
            lost = scheduler.last(t1)
            assert lost is not None
            assert lost.reason == TaskReason.TASK_REASON_RECONCILIATION, lost
            assert "unreachable" in lost.message
            state = await cluster.state()
            web = [f for f in state.frameworks if f.info.id == framework_id]
            assert len(web) == 1 and web[0].connected, state.frameworks
            assert web[0].info.failover_timeout == 600.0  # remembered, not the default of 1 s
            assert web[0].info.name == "web"
            assert [
                sdk.state_name(t.status.state) for t in state.tasks if t.info.task_id == t0
            ] == ["RUNNING"]
            code, out = await run_cli("get", "roles", "--master", cluster.master)
            assert code == 0 and "web" in out and "3" in out, out

            # The lost agent comes back late: the master told "web" its task was LOST, so the
            # task is killed rather than kept running beside whatever replaced it.
            await cluster.restart_agent(lost_name)
            await cluster.wait_for_agents(2, WAIT)
            await until_state(
                cluster,
                "t1 no longer running on the returned agent",
                lambda st: not any(t.info.task_id == t1 and not _ended(t) for t in st.tasks),
            )
            await driver.teardown()


def _ended(task: Any) -> bool:
    return sdk.state_name(task.status.state) in {
        "FINISHED",
        "FAILED",
        "KILLED",
        "ERROR",
        "LOST",
        "DROPPED",
        "GONE",
    }


async def agent_name(cluster: LocalCluster, agent_id: str) -> str:
    """The LocalCluster name (agent-N) of the agent with ``agent_id``: its work dir holds it."""
    for name in cluster.processes:
        if name.startswith("agent-"):
            checkpoint = cluster.work_dir / name / "agent_id"
            if checkpoint.exists() and agent_id in checkpoint.read_text():
                return name
    raise AssertionError(f"no agent process has id {agent_id}\n{cluster.logs()}")


async def until_state(cluster: LocalCluster, what: str, check: Any) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT
    while True:
        state = await cluster.state()
        if check(state):
            return
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {WAIT:g}s waiting for {what}: {state}")
        await asyncio.sleep(0.2)  # polling another process: there is no event to await
