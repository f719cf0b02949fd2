"""The batch framework on a real master with simulated agents (docs/frameworks.md): a 500-task
job through `corral run batch` completes, binpacked and quiet; preempted tasks are retried and
the job still succeeds."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import re
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from corral.frameworks import sdk
from corral.frameworks.batch import progress, run
from corral.frameworks.batch.job import JobSpec, Stage
from corral.frameworks.batch.scheduler import BatchScheduler
from corral.frameworks.sdk.testing import LocalCluster

pytestmark = pytest.mark.e2e

CORRAL = (sys.executable, "-m", "corral.cli.main")
_RUNNING = sdk.TaskState.TASK_STATE_RUNNING


async def until(check: object, timeout: float, what: str) -> None:
    async def poll() -> None:
        while not check():  # type: ignore[operator]
            await asyncio.sleep(0.05)

    try:
        await asyncio.wait_for(poll(), timeout)
    except TimeoutError:
        raise AssertionError(f"timed out after {timeout:g} s waiting for {what}") from None


def small_cluster(tmp_path: Path, agents: int) -> LocalCluster:
    """A master and ``agents`` simulated agents of 4 cpus, all registered once entered."""
    return LocalCluster(
        agents=agents,
        agent_resources="cpus:4;mem:1024;disk:100",
        work_dir=tmp_path,
        master_args=("--allocation-interval", "0.2"),
        agent_args=("--simulate",),
    )


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


async def test_progress_lines_say_each_change_and_are_never_long_silent(tmp_path: Path) -> None:
    """Issue #40: `--progress lines` printed nothing for 34 s of a 4-task job (a line came only
    with a tenth of the job ended). Now: a line when the tasks start running, and one at least
    every LINE_EVERY seconds while they run on."""
    async with small_cluster(tmp_path, agents=1) as cluster:
        proc = await asyncio.create_subprocess_exec(
            *CORRAL,
            *("run", "batch", "--master", cluster.master, "--tasks", "4", "--cpus", "1"),
            *("--mem", "64", "--duration", "30", "--progress", "lines"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        out_b, err_b = await asyncio.wait_for(proc.communicate(), 180)
        out = out_b.decode()
        assert proc.returncode == 0, f"{out}\n{err_b.decode()}\n{cluster.logs()}"
    stamped = [
        (float(m.group(1)), m.group(2))
        for m in re.finditer(r"^\[\s*([0-9.]+)s\] (.*)$", out, re.MULTILINE)
    ]
    said = [text for _, text in stamped]
    # The change from waiting to running is said, before any task ended.
    assert any(t.startswith("0/4 tasks ended") and "4 running" in t for t in said), out
    assert said[-1].startswith("4/4 tasks ended (4 succeeded"), out
    # Never silent for long while the tasks ran 30 s with nothing changing. The bound is twice
    # the promise: each line is stamped with the job's own clock, and a loaded machine may
    # delay the run loop's one-second tick, never by seconds on end.
    gaps = [b - a for (a, _), (b, _) in itertools.pairwise(stamped)]
    assert max(gaps) <= 2 * progress.LINE_EVERY, (gaps, out)
    assert len([t for t in said if "4 running" in t]) >= 2, out  # said again, unchanged


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
    async with small_cluster(tmp_path, agents=2) as cluster:
        spec = JobSpec("etl", (Stage("map", 12, cpus=1, mem=64, duration=3),))
        events: list[tuple[str, str]] = []
        batch = BatchScheduler(spec, lambda e: events.append((e.kind, e.detail)))
        job = asyncio.ensure_future(run.run_job(spec, cluster.master, scheduler=batch))
        await until(lambda: len(batch.job.live) == 8, 30, "8 batch tasks on the two agents")
        serving = Serving(3, cpus=2)
        async with sdk.Driver(serving, sdk.FrameworkInfo(name="web"), cluster.master) as ds:
            await ds.set_demands([sdk.Demand("web", 3, cpus=2, mem=64, priority_class="serving")])
            await until(lambda: len(serving.running) == 3, 30, "serving's 3 tasks running")
            assert batch.job.counts()["disruptions"] == 6  # 3 tasks of 2 cpus: 6 victims
            await ds.teardown()  # serving goes away: the retries get the room back
        summary = await asyncio.wait_for(job, 90)
    assert (summary["tasks"], summary["succeeded"], summary["failed"]) == (12, 12, 0)
    assert summary["disruptions"] == 6 and summary["retries"] == 6
    assert summary["attempts"] == 18
    assert events.count(("retry", "preempted")) == 6
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


async def test_two_runs_of_one_job_share_an_agent_without_a_refused_launch(tmp_path: Path) -> None:
    """Two runs of one job at once are two frameworks sharing an agent: neither run's launches
    are refused, and each run's task ids end with its own token (for people: `corral logs`)."""
    async with small_cluster(tmp_path, agents=1) as cluster:
        spec = JobSpec("etl", (Stage("map", 2, cpus=1, mem=64, duration=600),))
        runs = [BatchScheduler(spec), BatchScheduler(spec)]
        assert runs[0].job.run != runs[1].job.run
        jobs = [asyncio.ensure_future(run.run_job(spec, cluster.master, scheduler=b)) for b in runs]
        try:
            ids: list[str] = []
            for _ in range(300):  # 30 s at most
                state = await cluster.state()
                ids = [t.info.task_id for t in state.tasks if not sdk.is_terminal(t.status.state)]
                if len(ids) == 4 or any(b.refused_launches for b in runs):
                    break
                await asyncio.sleep(0.1)
            assert [b.refused_launches for b in runs] == [0, 0], ids
            assert len(ids) == len(set(ids)) == 4, f"the master holds {ids}"
            assert sorted(ids) == sorted(i for b in runs for i in b.job.live), ids
        finally:
            for j in jobs:
                j.cancel()
            await asyncio.gather(*jobs, return_exceptions=True)


async def corral_run_batch(
    cluster: LocalCluster, *args: str, timeout: float = 60
) -> tuple[int, str, str]:
    """`corral run batch ARGS` to its end, within ``timeout`` (killed and failed after it)."""
    proc = await asyncio.create_subprocess_exec(
        *CORRAL,
        *("run", "batch", "--master", cluster.master, *args),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        proc.kill()
        out, err = await proc.communicate()
        raise AssertionError(
            f"corral run batch {' '.join(args)} still ran after {timeout:g} s:\n"
            f"{out.decode()}\n{err.decode()}"
        ) from None
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_a_refused_demand_and_a_task_that_never_fits_end_the_job_with_the_reason(
    tmp_path: Path,
) -> None:
    async with LocalCluster(
        agents=2,
        agent_resources="cpus:2;mem:1024;disk:100",
        work_dir=tmp_path,
        master_args=("--allocation-interval", "0.2"),
        agent_args=("--simulate",),
    ) as cluster:
        await cluster.wait_for_agents(2, 30)
        # The master refuses every SetDemands of an unknown class: the job ends at once with
        # the master's reason, under its own name, and leaves no framework behind.
        code, out, err = await corral_run_batch(
            cluster, "--tasks", "2", "--priority-class", "nosuch", timeout=30
        )
        assert code == 1, out + err
        assert err.startswith("corral run batch: SetDemands failed: INVALID_ARGUMENT: "), err
        assert "'nosuch'" in err and len(err.strip().splitlines()) == 1, err

        # A task bigger than any agent: the master's reason every few seconds, then it gives
        # up, torn down, with the reason in its summary.
        summary_file = tmp_path / "summary.json"
        code, out, err = await corral_run_batch(
            cluster,
            *("--tasks", "1", "--cpus", "3", "--duration", "1", "--give-up-after", "6"),
            *("--json", str(summary_file)),
            timeout=40,
        )
        assert code == 1 and err == "", out + err
        reason = "tasks: 1 of 1 unplaced: 2 of 2 agents: insufficient cpus"
        waiting = [line for line in out.splitlines() if "waiting on the master: " in line]
        assert waiting and all(reason in line for line in waiting), out
        last = out.strip().splitlines()[-1]
        assert last.startswith("job batch: 1 tasks, 0 succeeded"), out
        assert "; gave up: no task launched or ended in 6 s; " + reason in last, out
        summary = json.loads(summary_file.read_text())
        assert summary["gave_up"].startswith("no task launched or ended in 6 s"), summary
        state = await cluster.state()
        assert {f.state for f in state.frameworks} == {"removed"}, state.frameworks


def running_pids(cluster: LocalCluster, framework_id: str) -> dict[str, int]:
    """The pids of the framework's task processes that are still alive, by task id, from
    their agents' checkpoints (``process.json``)."""
    pids = {}
    for path in cluster.work_dir.glob(f"agent-*/tasks/{framework_id}/*/process.json"):
        pid = json.loads(path.read_text()).get("pid")
        if pid and psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie":
            pids[path.parent.name] = int(pid)
    return pids


@pytest.mark.parametrize(("sig", "keep_running"), [(signal.SIGTERM, False), (signal.SIGINT, True)])
async def test_a_signal_tears_the_job_down_or_leaves_it_to_fail_over(
    sig: signal.Signals, keep_running: bool, tmp_path: Path
) -> None:
    async with LocalCluster(
        agents=1, work_dir=tmp_path, master_args=("--allocation-interval", "0.2")
    ) as cluster:
        proc = await asyncio.create_subprocess_exec(
            *CORRAL,
            *("run", "batch", "--master", cluster.master, "--tasks", "6", "--cpus", "1"),
            *("--mem", "32", "--command", "sleep 120"),
            *(("--keep-running",) if keep_running else ()),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:

            def ours() -> list[sdk.TaskStatus]:
                return [t.status for t in state.tasks if t.status.state == _RUNNING]

            state = await cluster.state()
            for _ in range(600):  # the agent's 4 cpus: 4 tasks running, 2 waiting
                state = await cluster.state()
                if len(ours()) == 4:
                    break
                await asyncio.sleep(0.1)
            assert len(ours()) == 4, cluster.logs()
            (framework,) = state.frameworks
            fid = framework.info.id
            assert len(running_pids(cluster, fid)) == 4
            proc.send_signal(sig)
            out_b, err_b = await asyncio.wait_for(proc.communicate(), 30)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        out, err = out_b.decode(), err_b.decode()
        assert proc.returncode == 1 and err == "", out + err  # not every task succeeded
        last = out.strip().splitlines()[-1]
        assert last.startswith("job batch: 6 tasks, 0 succeeded, 0 failed"), out
        if keep_running:
            assert last.endswith(
                f"; stopped by SIGINT; 4 running tasks left to fail over with framework {fid}"
            ), out
            state = await cluster.state()
            (framework,) = state.frameworks
            assert framework.state == "disconnected" and len(ours()) == 4
            assert len(running_pids(cluster, fid)) == 4
            return
        assert last.endswith("; stopped by SIGTERM; framework torn down, 4 running tasks killed")
        assert "stopping: tearing the framework down: its 4 running tasks are killed" in out
        state = await cluster.state()
        (framework,) = state.frameworks
        assert framework.state == "removed"
        for _ in range(300):
            if not running_pids(cluster, fid):
                break
            await asyncio.sleep(0.1)
        assert running_pids(cluster, fid) == {}, "the job's task processes outlived it"


async def test_a_drain_is_not_the_task_s_failure_even_with_no_retries(tmp_path: Path) -> None:
    # Issue #40, defect 7: `corral drain` of the agent of a --max-retries 0 job failed its 2
    # tasks, though a drain (AGENT_DRAINING) is not the task's failure. The second agent is
    # there from the start, cordoned, so both tasks run on the first and nothing slow (an agent
    # starting) stands between them running and the drain: a busy machine cannot let them
    # finish first.
    async with LocalCluster(
        agents=2,
        agent_resources="cpus:2;mem:1024;disk:100",
        work_dir=tmp_path,
        master_args=("--allocation-interval", "0.2"),
        agent_args=("--simulate",),
        insecure=True,
    ) as cluster:
        await cluster.wait_for_agents(2, 60)
        m = ("--master", cluster.master, "--insecure")
        first, second = sorted(a.info.id for a in (await cluster.state()).agents)

        def corral(*argv: str) -> subprocess.CompletedProcess[str]:
            done = subprocess.run([*CORRAL, *argv, *m], capture_output=True, text=True, timeout=90)
            assert done.returncode == 0, done.stdout + done.stderr
            return done

        await asyncio.to_thread(corral, "cordon", second)
        summary_file = tmp_path / "summary.json"
        proc = await asyncio.create_subprocess_exec(
            *CORRAL,
            *("run", "batch", "--master", cluster.master, "--insecure", "--tasks", "2"),
            *("--cpus", "1", "--mem", "64", "--duration", "10", "--max-retries", "0"),
            *("--json", str(summary_file)),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            running: list[str] = []

            async def both_running_on_first() -> bool:
                state = await cluster.state()
                running[:] = [t.info.agent_id for t in state.tasks if t.status.state == _RUNNING]
                return running == [first, first]

            async with asyncio.timeout(60):
                while not await both_running_on_first():
                    await asyncio.sleep(0.1)
            await asyncio.to_thread(corral, "drain", first, "--grace", "0", "--timeout", "60")
            await asyncio.to_thread(corral, "uncordon", second)
            out_b, err_b = await asyncio.wait_for(proc.communicate(), 90)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        out, err = out_b.decode(), err_b.decode()
        assert proc.returncode == 0, out + err + cluster.logs()
        summary = json.loads(summary_file.read_text())
        assert (summary["succeeded"], summary["failed"], summary["failures"]) == (2, 0, 0)
        assert summary["disruptions"] == 2 and summary["retries"] == 2, summary
        assert "(2 disruptions, 0 failures)" in out.strip().splitlines()[-1], out
