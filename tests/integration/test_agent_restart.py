"""Issue 15, "Nothing lost": kill -9 an agent and start it again on the same work dir.

Real processes end to end: a master and an agent started by ``LocalCluster``, an SDK framework,
``sh -c`` tasks. The agent is SIGKILLed (its tasks are not: they run in sessions of their own),
one task exits while it is down, and the agent is started again. The running task must be
re-attached (still RUNNING in the master, never LOST to the framework, the original process the
only one running it, killable through the framework), the one that exited must be reported with
its real exit code, and a changed configuration must be refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from corral.frameworks import sdk
from corral.frameworks.sdk.testing import LocalCluster
from tests.integration.recording import WAIT, RecordingScheduler

pytestmark = pytest.mark.e2e

RESOURCES = "cpus:4;mem:2048;disk:1000;ports:{ports}"  # the cluster's own range


class Recorder(RecordingScheduler):
    """Launches what is queued on the offers it gets; records every status."""

    def __init__(self) -> None:
        super().__init__()
        self.queue: list[sdk.TaskInfo] = []
        self.launched: list[str] = []

    async def offers(self, driver: sdk.Driver, offers: list[sdk.Offer]) -> None:
        for offer in offers:
            packer = sdk.OfferPacker(offer)
            self.queue = packer.add_all(self.queue)
            self.launched += [t.task_id for t in packer.tasks]
            await driver.launch([offer], packer.tasks, refuse_seconds=0)

    def states(self, task_id: str) -> list[str]:
        return [sdk.state_name(s.state) for s in self.statuses.get(task_id, [])]


async def poll(what: str, check: Callable[[], object], timeout: float = WAIT) -> None:
    """For conditions of other processes (files, pids): there is no event to await."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
        await asyncio.sleep(0.05)


def read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (FileNotFoundError, ValueError):
        return None


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def groups_running(task_id: str) -> set[int]:
    """Process groups of the processes that run ``task_id`` (the shims, which carry the task's
    environment to pass it on, are not the task)."""
    groups: set[int] = set()
    for proc in psutil.process_iter(["pid", "cmdline", "status"]):
        try:
            if proc.info["status"] == psutil.STATUS_ZOMBIE or any(
                part.endswith("shim.py") for part in proc.info["cmdline"] or ()
            ):
                continue
            if proc.environ().get("CORRAL_TASK_ID") == task_id:
                groups.add(os.getpgid(proc.pid))
        except (psutil.Error, ProcessLookupError):
            continue
    return groups


async def master_task_state(cluster: LocalCluster, task_id: str) -> str:
    state = await cluster.state()
    for entry in state.tasks:
        if entry.info.task_id == task_id:
            return sdk.state_name(entry.status.state)
    return "absent"


async def test_kill_9_agent_restart_reattaches_running_tasks_and_reports_ended_ones(
    tmp_path: Path,
) -> None:
    pgids: list[int] = []
    async with LocalCluster(
        agents=1,
        agent_resources=RESOURCES,
        work_dir=tmp_path,
        # The agent is back long before the master would give up on it.
        master_args=("--allocation-interval", "0.2", "--agent-timeout", "30"),
    ) as cluster:
        try:
            await _scenario(cluster, tmp_path, pgids)
        finally:
            for pgid in pgids:  # whatever the outcome, no task outlives the test
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pgid, signal.SIGKILL)


async def _scenario(cluster: LocalCluster, tmp_path: Path, pgids: list[int]) -> None:
    work = tmp_path / "agent-0"
    sandboxes = work / "sandboxes"
    rec = Recorder()
    info = sdk.FrameworkInfo(name="restart", role="*")
    async with sdk.Driver(rec, info, cluster.master) as driver:
        rec.queue = [
            sdk.task("long", "echo $$ > pid; sleep 60", cpus=0.5, mem=16, task_id="long"),
            # Ends with code 7 once the test creates its `go` file (while the agent is down).
            sdk.task(
                "quitter",
                "echo $$ > pid; while [ ! -e go ]; do sleep 0.05; done; exit 7",
                cpus=0.5,
                mem=16,
                task_id="quitter",
            ),
        ]
        await rec.until(
            "both tasks RUNNING",
            lambda: all("RUNNING" in rec.states(t) for t in ("long", "quitter")),
        )
        sandbox = {t: next(sandboxes.glob(f"*/{t}")) for t in ("long", "quitter")}
        await poll("pid files", lambda: all(read_pid(s / "pid") for s in sandbox.values()))
        pid = {t: read_pid(s / "pid") or 0 for t, s in sandbox.items()}
        pgids.extend(pid.values())
        assert groups_running("long") == {pid["long"]}

        # kill -9 the agent, not its tasks.
        await cluster.kill("agent-0")
        assert alive(pid["long"]) and alive(pid["quitter"])
        # The quitter exits while the agent is down; its shim records the code.
        (sandbox["quitter"] / "go").touch()
        await poll("the quitter to exit", lambda: not alive(pid["quitter"]))
        # ... and its shim too (else the restarted agent re-attaches to the shim and sees the
        # exit as it happens, which is right too, but not the case this test is about).
        (meta,) = work.glob("tasks/*/quitter")
        shim_pid = json.loads((meta / "process.json").read_text())["shim_pid"]
        await poll("the quitter's shim to exit", lambda: not alive(shim_pid))
        assert json.loads((meta / "exit_status").read_text()) == {"exit_code": 7}

        await cluster.restart_agent("agent-0")
        await cluster.wait_for_agents(1, WAIT)

        # The task that ended meanwhile: reported with its real exit status.
        await rec.until("quitter FAILED", lambda: "FAILED" in rec.states("quitter"))
        quitter = rec.last("quitter")
        assert quitter is not None and quitter.exit_code == 7, quitter
        assert "while the agent was down" in quitter.message

        # The running task was re-attached: RUNNING in the master, never LOST (or anything
        # terminal) to the framework, the original process the only one running it, and it
        # was launched once.
        assert await master_task_state(cluster, "long") == "RUNNING"
        assert alive(pid["long"])
        assert groups_running("long") == {pid["long"]}
        assert rec.launched.count("long") == 1
        assert not [s for s in rec.states("long") if s not in {"STARTING", "RUNNING"}]

        # Killing it through the framework ends the original process.
        await driver.kill("long")
        await rec.until("long KILLED", lambda: "KILLED" in rec.states("long"))
        await poll("the original process to end", lambda: not alive(pid["long"]))
        assert groups_running("long") == set()
        assert set(rec.states("long")) == {"STARTING", "RUNNING", "KILLING", "KILLED"}
        # Both ends were acknowledged: nothing of them is left in the checkpoint.
        await poll("the task checkpoints to be removed", lambda: not any(work.glob("tasks/*/*")))

        # A changed configuration is refused (exit 2), with what changed and what to do.
        await cluster.kill("agent-0")
        refused = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "corral.cli.main",
            "agent",
            *("--master", cluster.master, "--work-dir", str(work)),
            *("--resources", cluster.resources(RESOURCES.replace("cpus:4", "cpus:8"), "agent-0")),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        _, err = await asyncio.wait_for(refused.communicate(), WAIT)
        message = err.decode()
        assert refused.returncode == 2, message
        assert "resources 'cpus:4" in message and "cpus:8" in message, message
        assert "agent_id" in message and len(message.strip().splitlines()) == 1, message
        await driver.teardown()
