"""The gang trainer on a real master with real agents (docs/frameworks.md, "Gang trainer"):
`corral run gang` places 4 workers as one gang and trains them to convergence; a worker killed
mid-training restarts the whole gang, which resumes from the last checkpoint and converges."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest

from corral.frameworks import sdk
from corral.frameworks.gang import checkpoint, run, train
from corral.frameworks.gang.spec import TrainSpec
from corral.frameworks.sdk.testing import LocalCluster
from tests.master_http import master_session

pytestmark = pytest.mark.e2e

CORRAL = (sys.executable, "-m", "corral.cli.main")
# Two agents of two GPUs: a gang of four one-GPU workers needs both, all at once.
AGENTS = "cpus:4;mem:4096;disk:1000;gpus:2;ports:{ports}"  # the cluster's own range
# At the least-squares optimum the mean squared error is about the noise variance (a little
# below: DIM of the 4 x SHARD points' degrees of freedom are fitted); converged means close.
LOSS_BOUND = 1.5 * train.NOISE**2


async def until(check: Any, timeout: float, what: str) -> None:
    async def poll() -> None:
        while not check():
            await asyncio.sleep(0.05)  # another process's files: there is no event to await

    try:
        await asyncio.wait_for(poll(), timeout)
    except TimeoutError:
        raise AssertionError(f"timed out after {timeout:g} s waiting for {what}") from None


async def scheduled_events(cluster: LocalCluster) -> list[dict[str, Any]]:
    async with master_session(cluster) as http:
        url = f"{cluster.base_url}/api/v1/events"
        async with http.get(url, params={"reason": "Scheduled"}) as r:
            assert r.status == 200
            events: list[dict[str, Any]] = await r.json()
            return events


def gang_cluster(tmp_path: Path) -> LocalCluster:
    return LocalCluster(
        agents=2,
        agent_resources=AGENTS,
        work_dir=tmp_path / "cluster",
        master_args=("--allocation-interval", "0.2"),
    )


async def test_corral_run_gang_places_four_workers_together_and_converges(
    tmp_path: Path,
) -> None:
    async with gang_cluster(tmp_path) as cluster:
        summary_file = tmp_path / "summary.json"
        proc = await asyncio.create_subprocess_exec(
            *CORRAL,
            *("run", "gang", "--master", cluster.master, "--workers", "4", "--steps", "200"),
            *("--gpus-per-worker", "1", "--cpus-per-worker", "1", "--mem-per-worker", "128"),
            *("--checkpoint-dir", str(tmp_path / "ckpt"), "--json", str(summary_file)),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        out_b, err_b = await asyncio.wait_for(proc.communicate(), 120)
        out, err = out_b.decode(), err_b.decode()
        assert proc.returncode == 0, f"{out}\n{err}\n{cluster.logs()}"
        assert err == ""  # the teardown at the end is quiet
        summary = json.loads(summary_file.read_text())
        assert summary["succeeded"] and summary["restarts"] == 0, summary
        assert summary["final_loss"] < LOSS_BOUND, summary
        assert summary["resumed_from_step"] == 0
        assert summary["bundles"] == [sorted(summary["bundles"][0])]  # one bundle...
        assert len(summary["bundles"][0]) == 2  # ... of both agents
        assert f"final loss {summary['final_loss']:.6g}" in out
        assert out.strip().splitlines()[-1].startswith("gang train: trained; 4 workers")

        # The master saw one accept launch all four: one Scheduled event, on both agents.
        (event,) = await scheduled_events(cluster)
        assert event["message"].startswith("4 tasks launched on agents "), event
        assert event["subject"].endswith("/train-0")
        state = await cluster.state()
        ours = [t for t in state.tasks if t.info.task_id.startswith("train-a0-rank")]
        assert sorted(without_run(t.info.task_id) for t in ours) == [
            f"train-a0-rank{r}" for r in range(4)
        ]
        assert len({t.info.task_id[-6:] for t in ours}) == 1  # one run's token
        assert {sdk.state_name(t.status.state) for t in ours} == {"FINISHED"}
        # Rank 0 holds one port of its offer (its MASTER_PORT); the others hold none.
        ports = {
            without_run(t.info.task_id): [(r.begin, r.end) for r in t.info.resources.ports]
            for t in ours
        }
        ((begin, end),) = ports.pop("train-a0-rank0")
        ranges = [cluster.port_range(name) for name in cluster.processes if name != "master"]
        assert begin == end and any(first <= begin <= last for first, last in ranges), ranges
        assert list(ports.values()) == [[]] * 3
        assert [f.info.name for f in state.frameworks if f.connected] == []  # torn down


async def test_corral_run_gang_says_where_training_is_while_it_trains(tmp_path: Path) -> None:
    """Issue #40: between `placed` and `succeeded` the trainer said nothing, however long the
    training. Now a line of where it is at least every LINE_EVERY seconds."""
    async with gang_cluster(tmp_path) as cluster:
        proc = await asyncio.create_subprocess_exec(
            *CORRAL,
            *("run", "gang", "--master", cluster.master, "--workers", "4", "--steps", "200"),
            *("--step-seconds", "0.15", "--gpus-per-worker", "1", "--cpus-per-worker", "1"),
            *("--mem-per-worker", "128", "--checkpoint-dir", str(tmp_path / "ckpt")),
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
    training = [t for t in said if t.startswith("running: attempt 0, 4 of 4 workers running")]
    assert training, out
    assert any("last checkpoint at step" in t for t in training), out
    # Each line is stamped with the run's own clock; twice the promise allows for a loaded
    # machine delaying the loop's one-second tick, not for a silence through the training.
    gaps = [b - a for (a, _), (b, _) in itertools.pairwise(stamped)]
    assert max(gaps) <= 2 * run.LINE_EVERY, (gaps, out)


RUN_TOKEN = re.compile(r"-[0-9a-f]{6}$")


def without_run(task_id: str) -> str:
    """A member's id without its run's token ("train-a0-rank1-5be1c2" -> "train-a0-rank1")."""
    assert RUN_TOKEN.search(task_id), f"{task_id} does not end with a run's token"
    return RUN_TOKEN.sub("", task_id)


def task_pid(cluster: LocalCluster, task_id: str) -> int | None:
    """The pid of a running task named ``task_id`` whatever its run's token, from its agent's
    checkpoint (``process.json``)."""
    for path in cluster.work_dir.glob(f"agent-*/tasks/*/{task_id}-*/process.json"):
        pid = json.loads(path.read_text()).get("pid")
        if pid:
            return int(pid)
    return None


async def test_a_killed_worker_restarts_the_gang_from_its_checkpoint(tmp_path: Path) -> None:
    ckpt = tmp_path / "ckpt"
    spec = TrainSpec(
        workers=4,
        steps=300,
        checkpoint_dir=str(ckpt),
        gpus=1,
        cpus=1,
        mem=128,
        max_restarts=2,
        checkpoint_every=25,
        step_seconds=0.01,  # about 3 s of training: time to kill a worker halfway
        peer_timeout=10,
    )
    async with gang_cluster(tmp_path) as cluster:
        training = asyncio.ensure_future(run.run_training(spec, cluster.master))
        try:
            await until(
                lambda: (checkpoint.load(ckpt) or (0,))[0] >= 50 or training.done(),
                60,
                "a checkpoint at step 50",
            )
            assert not training.done(), training.result()
            pid = task_pid(cluster, "train-a0-rank1")
            assert pid is not None, cluster.logs()
            os.kill(pid, signal.SIGKILL)
            summary = await asyncio.wait_for(training, 120)
        finally:
            training.cancel()
        assert summary["succeeded"], summary
        assert summary["restarts"] == 1 and summary["attempts"] == 2, summary
        failed, state = summary["failures"][0].split()[:2]
        assert (without_run(failed), state) == ("train-a0-rank1", "FAILED"), summary
        assert summary["resumed_from_step"] >= 50, summary  # not from scratch
        assert summary["final_loss"] < LOSS_BOUND, summary
        assert len(summary["bundles"]) == 2  # each attempt one whole gang
        events = await scheduled_events(cluster)
        assert sorted(e["subject"].split("/")[-1] for e in events) == ["train-0", "train-1"]
        assert all(e["message"].startswith("4 tasks launched") for e in events), events
        state = await cluster.state()
        assert [t.info.task_id for t in state.tasks if not sdk.is_terminal(t.status.state)] == []


async def corral_run_gang(cluster: LocalCluster, *args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        *CORRAL,
        *("run", "gang", "--master", cluster.master, *args),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_a_gang_that_keeps_failing_gives_up_after_max_restarts(tmp_path: Path) -> None:
    async with gang_cluster(tmp_path) as cluster:
        summary_file = tmp_path / "summary.json"
        code, out, err = await corral_run_gang(
            cluster,
            *("--workers", "3", "--gpus-per-worker", "1", "--steps", "10", "--max-restarts", "1"),
            *("--command", 'test "$RANK" != 2', "--checkpoint-dir", str(tmp_path / "c")),
            *("--json", str(summary_file)),
        )
        assert code == 1, f"{out}\n{err}"
        assert err == ""
        summary = json.loads(summary_file.read_text())
        assert (summary["succeeded"], summary["restarts"], summary["attempts"]) == (False, 1, 2)
        assert [[without_run(f.split()[0]), f.split()[1]] for f in summary["failures"]] == [
            ["train-a0-rank2", "FAILED"], ["train-a1-rank2", "FAILED"]
        ]  # fmt: skip
        assert summary["final_loss"] is None  # a custom command writes no result
        assert "gave up: 1 restarts used" in out
        assert out.strip().splitlines()[-1].startswith("gang train: FAILED; 3 workers")

        # A demand the master refuses (an unknown class) ends the run with one line.
        code, out, err = await corral_run_gang(
            cluster,
            *("--workers", "2", "--steps", "1", "--priority-class", "nope"),
            *("--checkpoint-dir", str(tmp_path / "c2")),
        )
        assert code == 1 and "nope" in err and len(err.strip().splitlines()) == 1, err


async def test_a_gang_that_cannot_be_placed_says_why_and_gives_up_and_sigterm_tears_down(
    tmp_path: Path,
) -> None:
    async with gang_cluster(tmp_path) as cluster:
        # Five one-GPU workers on two agents of two GPUs: never placed. The master's reason
        # every few seconds, then it gives up, torn down.
        code, out, err = await corral_run_gang(
            cluster,
            *("--workers", "5", "--gpus-per-worker", "1", "--steps", "10"),
            *("--checkpoint-dir", str(tmp_path / "c1"), "--give-up-after", "6"),
        )
        assert code == 1 and err == "", out + err
        waiting = [
            line for line in out.splitlines() if "] waiting: train-0: 5 of 5 unplaced: " in line
        ]
        reason = "1/5 tasks unplaceable: the agents that fit hold fewer tasks"  # the master's
        assert waiting and all(reason in line for line in waiting), out
        last = out.strip().splitlines()[-1]
        assert last.startswith("gang train: FAILED; 5 workers"), out
        assert "; gave up: the gang waited 6 s unplaced; train-0: 5 of 5 unplaced: " in last, out
        assert last.endswith("; framework torn down, 0 running workers killed"), out

        # SIGTERM while the gang runs: torn down, its workers killed, the summary printed.
        proc = await asyncio.create_subprocess_exec(
            *CORRAL,
            *("run", "gang", "--master", cluster.master, "--workers", "2", "--steps", "1"),
            *("--gpus-per-worker", "1", "--command", "sleep 120"),
            *("--checkpoint-dir", str(tmp_path / "c2")),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            await until(
                lambda: task_pid(cluster, "train-a0-rank0") and task_pid(cluster, "train-a0-rank1"),
                60,
                "both workers running",
            )
            pids = [task_pid(cluster, f"train-a0-rank{r}") for r in range(2)]
            proc.send_signal(signal.SIGTERM)
            out_b, err_b = await asyncio.wait_for(proc.communicate(), 30)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        out, err = out_b.decode(), err_b.decode()
        assert proc.returncode == 1 and err == "", out + err
        assert "stopping: tearing the framework down: its 2 running workers are killed" in out
        last = out.strip().splitlines()[-1]
        assert last.startswith("gang train: FAILED; 2 workers"), out
        assert last.endswith("; stopped by SIGTERM; framework torn down, 2 running workers killed")
        state = await cluster.state()
        assert {f.state for f in state.frameworks} == {"removed"}

        def alive() -> list[int]:
            return [p for p in pids if p and psutil.pid_exists(p) and not _zombie(p)]

        await until(lambda: not alive(), 30, f"the workers {pids} to be killed")


def _zombie(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True
