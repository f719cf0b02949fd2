"""The batch framework on a real master with simulated agents (docs/frameworks.md): a 500-task
job through `corral run batch` completes, binpacked and quiet; preempted tasks are retried and
the job still succeeds."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from corral.frameworks import sdk
from corral.frameworks.batch import run
from corral.frameworks.batch.job import JobSpec, Stage
from corral.frameworks.batch.scheduler import BatchScheduler
from corral.frameworks.sdk.testing import LocalCluster

pytestmark = pytest.mark.e2e

CORRAL = (sys.executable, "-m", "corral.cli.main")


async def until(check: object, timeout: float, what: str) -> None:
    async def poll() -> None:
        while not check():  # type: ignore[operator]
            await asyncio.sleep(0.05)

    try:
        await asyncio.wait_for(poll(), timeout)
    except TimeoutError:
        raise AssertionError(f"timed out after {timeout:g} s waiting for {what}") from None


async def test_corral_run_batch_completes_a_500_task_job(tmp_path: Path) -> None:
    async with LocalCluster(
        agents=0,
        work_dir=tmp_path / "cluster",
        master_args=("--allocation-interval", "0.2"),
        agent_args=("--simulate",),
    ) as cluster:
        # Agents of different sizes; --max-cpus keeps the job below the cluster's 64 cpus.
        for i, cpus in enumerate((16, 8, 8, 16, 16)):
            await cluster.add_agent(f"agent-{i}", f"cpus:{cpus};mem:8192;disk:1000")
        await cluster.wait_for_agents(5, 60)
        summary_file = tmp_path / "summary.json"
        proc = await asyncio.create_subprocess_exec(
            *CORRAL,
            *("run", "batch", "--master", cluster.master, "--tasks", "500"),
            *("--cpus", "1", "--mem", "64", "--duration", "0.5", "--max-cpus", "48"),
            *("--json", str(summary_file)),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        out_b, err_b = await asyncio.wait_for(proc.communicate(), 180)
        out, err = out_b.decode(), err_b.decode()
        assert proc.returncode == 0, f"{out}\n{err}\n{cluster.logs()}"
        assert err == ""  # tearing down at the end is quiet
        summary = json.loads(summary_file.read_text())
        assert (summary["tasks"], summary["succeeded"], summary["failed"]) == (500, 500, 0)
        assert summary["retries"] == 0
        last = out.strip().splitlines()[-1]
        assert last.startswith("job batch: 500 tasks, 500 succeeded, 0 failed"), out
        assert "500/500 tasks ended" in out  # progress as log lines: stdout is not a terminal
        state = await cluster.state()
        assert [t.info.task_id for t in state.tasks if not sdk.is_terminal(t.status.state)] == []
        # Torn down: the master no longer counts the job as a framework.
        assert [f.info.name for f in state.frameworks if f.connected] == []


class Serving(sdk.Scheduler):
    """A serving framework: ``count`` long tasks of its demand, in class serving."""

    def __init__(self, count: int, cpus: float) -> None:
        self.count, self.cpus = count, cpus
        self.launched = 0
        self.running: set[str] = set()

    async def offers(self, driver: sdk.Driver, offers: list[sdk.Offer]) -> None:
        for offer in offers:
            n = min(self.count - self.launched, int(offer.resources.cpus / self.cpus + 1e-9))
            tasks = [
                sdk.task(
                    "web",
                    "sleep 600",
                    cpus=self.cpus,
                    mem=64,
                    demand="web",
                    priority_class="serving",
                    simulate_seconds=600,
                )
                for _ in range(max(0, n))
            ]
            self.launched += len(tasks)
            await driver.launch([offer], tasks, refuse_seconds=0.2)

    async def status(self, driver: sdk.Driver, status: sdk.TaskStatus) -> None:
        if status.state == sdk.TaskState.TASK_STATE_RUNNING:
            self.running.add(status.task_id)


async def test_preempted_batch_tasks_are_retried_and_the_job_succeeds(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    async with LocalCluster(
        agents=0,
        work_dir=tmp_path,
        master_args=("--allocation-interval", "0.2"),
        agent_args=("--simulate",),
    ) as cluster:
        for i in range(2):
            await cluster.add_agent(f"agent-{i}", "cpus:4;mem:1024;disk:100")
        await cluster.wait_for_agents(2, 30)
        spec = JobSpec("etl", (Stage("map", 12, cpus=1, mem=64, duration=3),))
        events: list[tuple[str, str]] = []
        batch = BatchScheduler(spec, lambda e: events.append((e.kind, e.detail)))
        job = asyncio.ensure_future(run.run_job(spec, cluster.master, scheduler=batch))
        await until(lambda: len(batch.job.live) == 8, 30, "8 batch tasks on the two agents")
        serving = Serving(3, cpus=2)
        async with sdk.Driver(serving, sdk.FrameworkInfo(name="web"), cluster.master) as ds:
            await ds.set_demands([sdk.Demand("web", 3, cpus=2, mem=64, priority_class="serving")])
            await until(lambda: len(serving.running) == 3, 30, "serving's 3 tasks running")
            assert batch.job.counts()["preemptions"] == 6  # 3 tasks of 2 cpus: 6 victims
            await ds.teardown()  # serving goes away: the retries get the room back
        summary = await asyncio.wait_for(job, 90)
    assert (summary["tasks"], summary["succeeded"], summary["failed"]) == (12, 12, 0)
    assert summary["preemptions"] == 6 and summary["retries"] == 6
    assert summary["attempts"] == 18
    assert events.count(("retry", "preempted")) == 6
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
