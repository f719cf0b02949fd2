"""The job service on real processes (docs/jobs.md): a master and agents (LocalCluster),
`corral jobs serve` as its own process, its HTTP API and the `corral job` CLI: two queues of a
cohort borrowing and reclaiming, a gang admitted only whole, StrictFIFO against
BestEffortFIFO, kill -9 of the service with a job running (no task runs twice, the job
completes), cancel, a tenant refused a queue, and bad job files."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from corral.frameworks import sdk
from corral.frameworks.sdk.testing import LocalCluster
from tests.integration.job_service import JobsProcess

pytestmark = pytest.mark.e2e

FAST = ("--allocation-interval", "0.2")


def queue(
    name: str, cpus: float, cohort: str = "", strategy: str = "BestEffortFIFO"
) -> dict[str, Any]:
    return {
        "name": name,
        "cohort": cohort,
        "queueing_strategy": strategy,
        "resources": {"default": {"cpus": cpus}},
    }


def batch(name: str, queue: str, tasks: int, command: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "queue": queue,
        "stages": [{"name": "s", "tasks": tasks, "cpus": 1, "mem": 32, "command": command}],
        **extra,
    }


async def live_by_framework(cluster: LocalCluster) -> dict[str, int]:
    state = await cluster.state()
    out: dict[str, int] = {}
    for t in state.tasks:
        if not sdk.is_terminal(t.status.state):
            out[t.info.framework_id] = out.get(t.info.framework_id, 0) + 1
    return out


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    async with LocalCluster(
        agents=2,
        agent_resources="cpus:4;mem:4096;disk:1000;ports:{ports}",
        work_dir=tmp_path / "cluster",
        master_args=FAST,
        agent_args=("--hostname", "127.0.0.1"),
    ) as c:
        await c.wait_for_agents(2, 30)
        yield c


def start(
    tmp_path: Path, cluster: LocalCluster, queues: dict[str, Any], *extra: str
) -> JobsProcess:
    config = tmp_path / "queues.json"
    config.write_text(json.dumps(queues))
    return JobsProcess(
        tmp_path / "state", cluster.master, tmp_path / "jobs.log", "--queues", str(config), *extra
    )


async def test_two_queues_of_a_cohort_borrow_and_reclaim(
    tmp_path: Path, cluster: LocalCluster
) -> None:
    s = await start(
        tmp_path, cluster, {"cluster_queues": [queue("team-a", 4, "ml"), queue("team-b", 4, "ml")]}
    ).wait_ready()
    try:
        # Team A: three jobs of 2 cpus; the third borrows B's unused quota.
        for i in range(3):
            await s.ok("POST", "/v1/jobs", batch(f"a{i}", "team-a", 2, "exec sleep 120"))
        for i in range(3):
            await s.wait_phase(f"a{i}", "Admitted")
        queues = {q["cluster_queue"]: q for q in (await s.ok("GET", "/v1/queues"))["queues"]}
        assert queues["team-a"]["used"]["cpus"] == 6 and queues["team-a"]["borrowed"]["cpus"] == 2
        assert queues["team-b"]["lent"]["cpus"] == 2
        a2 = await s.job("a2")
        assert sum((await live_by_framework(cluster)).values()) == 6

        # Team B wants its 4 cpus: A's newest job is preempted whole, B's job starts.
        await s.ok("POST", "/v1/jobs", batch("b0", "team-b", 4, "exec sleep 120"))
        b0 = await s.wait_phase("b0", "Admitted", timeout=30)
        assert b0["flavor"] == "default"
        history = (await s.ok("GET", "/v1/jobs/a2/history"))["history"]
        evicted = [h for h in history if h["kind"] == "Evicting"]
        assert evicted and evicted[0]["message"] == (
            "preempted: queue team-b reclaims its nominal quota from cohort ml "
            "(queue team-a borrows it) for job b0"
        ), history
        a2_after = await s.wait_phase("a2", "Pending")
        assert "requeued after it was preempted: queue team-b" in a2_after["reason"]
        # Its framework is gone from the master with its tasks; a0 and a1 still run.
        live = await live_by_framework(cluster)
        assert a2["framework_id"] not in live
        assert live[b0["framework_id"]] == 4
        assert sum(live.values()) == 8
        # The CLI's queues view says the same.
        done = s.corral("queues")
        assert done.returncode == 0, done.stderr
        assert "team-b" in done.stdout and "cpus 4" in done.stdout
        # Metrics.
        metrics = await _text(s, "/metrics")
        assert 'corral_queue_pending_jobs{queue="team-a"} 1.0' in metrics
        assert (
            'corral_queue_admitted_resources{flavor="default",queue="team-b",resource="cpus"} 4.0'
            in metrics
        )
    finally:
        s.stop()


async def _text(s: JobsProcess, path: str) -> str:
    from tests.master_http import local_session

    async with local_session() as session, session.get(s.url + path) as response:
        return await response.text()
