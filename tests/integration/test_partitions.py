"""Issue 15, "Nothing lost": a partition heals.

Real processes: a master with a short agent timeout, one agent, two SDK frameworks (one
partition-aware), ``sh -c`` tasks. The agent is SIGSTOPped past its timeout (its stream stays
open: the kernel keeps the connection, nothing is read or sent) and SIGCONTed. The master must
take it back: ACTIVE again, the partition-aware task RUNNING again, the other framework's task
(already reported LOST) killed, and the agent's free resources offered again.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

import pytest

from corral.frameworks import sdk
from corral.frameworks.sdk.testing import LocalCluster
from corral.v1 import common_pb2
from tests.integration.recording import WAIT
from tests.integration.test_agent_restart import Recorder, alive, master_task_state, poll, read_pid

pytestmark = pytest.mark.e2e

RESOURCES = "cpus:4;mem:2048;disk:1000"


async def test_a_paused_agent_comes_back_active_and_reconciles_its_tasks(tmp_path: Path) -> None:
    pids: list[int] = []
    async with LocalCluster(
        agents=1,
        agent_resources=RESOURCES,
        work_dir=tmp_path,
        master_args=("--allocation-interval", "0.2", "--agent-timeout", "2"),
    ) as cluster:
        try:
            await _scenario(cluster, tmp_path, pids)
        finally:
            agent = cluster.processes["agent-0"]
            with contextlib.suppress(ProcessLookupError):
                os.kill(agent.pid, signal.SIGCONT)  # never leave it stopped for close()
            for pid in (p for p in pids if p > 0):  # never killpg(0): that is our own group
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)


async def _scenario(cluster: LocalCluster, tmp_path: Path, pids: list[int]) -> None:
    sandboxes = tmp_path / "agent-0" / "sandboxes"
    aware, plain = Recorder(), Recorder()
    aware_info = sdk.FrameworkInfo(
        name="aware", role="*", capabilities=[common_pb2.FRAMEWORK_CAPABILITY_PARTITION_AWARE]
    )
    plain_info = sdk.FrameworkInfo(name="plain", role="*")
    async with (
        sdk.Driver(aware, aware_info, cluster.master),
        sdk.Driver(plain, plain_info, cluster.master),
    ):
        aware.queue = [sdk.task("kept", "echo $$ > pid; sleep 120", cpus=1, mem=16, task_id="kept")]
        plain.queue = [sdk.task("lost", "echo $$ > pid; sleep 120", cpus=1, mem=16, task_id="lost")]
        await aware.until("kept RUNNING", lambda: "RUNNING" in aware.states("kept"))
        await plain.until("lost RUNNING", lambda: "RUNNING" in plain.states("lost"))
        sandbox = {t: next(sandboxes.glob(f"*/{t}")) for t in ("kept", "lost")}
        await poll("pid files", lambda: all(read_pid(s / "pid") for s in sandbox.values()))
        pid = {t: read_pid(s / "pid") or 0 for t, s in sandbox.items()}
        pids.extend(pid.values())

        agent = cluster.processes["agent-0"]
        os.kill(agent.pid, signal.SIGSTOP)
        await aware.until("kept UNREACHABLE", lambda: "UNREACHABLE" in aware.states("kept"))
        await plain.until("lost LOST", lambda: "LOST" in plain.states("lost"))
        assert alive(pid["kept"]) and alive(pid["lost"])  # a paused agent's tasks run on
        os.kill(agent.pid, signal.SIGCONT)

        # Back: ACTIVE, the partition-aware task RUNNING again (its framework is told), the
        # other framework's task killed (it was reported LOST: it must not run on unseen).
        await cluster.wait_for_agents(1, WAIT)
        await aware.until(
            "kept RUNNING again",
            lambda: (
                aware.states("kept")[aware.states("kept").index("UNREACHABLE") :][-1] == "RUNNING"
            ),
        )
        assert await master_task_state(cluster, "kept") == "RUNNING"
        await poll("the LOST task's process to be killed", lambda: not alive(pid["lost"]))
        assert alive(pid["kept"])
        assert await master_task_state(cluster, "lost") == "LOST"

        # Its resources are offered again: a new task runs on the 3 cpus left.
        plain.queue = [
            sdk.task("after", "echo $$ > pid; sleep 120", cpus=3, mem=16, task_id="after")
        ]
        await plain.until("after RUNNING", lambda: "RUNNING" in plain.states("after"))
        after = next(sandboxes.glob("*/after")) / "pid"
        await poll("after's pid file", lambda: read_pid(after))
        pids.append(read_pid(after) or 0)
