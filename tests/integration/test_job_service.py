"""The job service on real processes (docs/jobs.md): a master and agents (LocalCluster),
`corral jobs serve` as its own process, its HTTP API and the `corral job` CLI: two queues of a
cohort borrowing and reclaiming, a gang admitted only whole, StrictFIFO against
BestEffortFIFO, kill -9 of the service with a job running (no task runs twice, the job
completes), cancel, a tenant refused a queue, and bad job files."""

from __future__ import annotations

import contextlib
import json
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from corral.frameworks import sdk
from corral.frameworks.sdk import tls as sdk_tls
from corral.frameworks.sdk.testing import LocalCluster
from corral.v1 import common_pb2, operator_pb2, operator_pb2_grpc
from tests.integration.corral_cli import corral
from tests.integration.job_service import JobsProcess, until_async
from tests.integration.service_cluster import FAST, services_cluster

pytestmark = pytest.mark.e2e


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
    async with services_cluster(tmp_path) as c:
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
        # Its tasks were taken back through the master's preemption: each KILLED, reason
        # PREEMPTED, naming the queue (not merely "framework removed"), in `corral describe
        # task` too, and the job's history says how many.
        why = "queue team-b reclaims its nominal quota from cohort ml (queue team-a borrows it)"
        taken = [
            t for t in (await cluster.state()).tasks if t.info.framework_id == a2["framework_id"]
        ]
        assert len(taken) == 2, taken
        for t in taken:
            assert t.status.state == common_pb2.TASK_STATE_KILLED, t.status
            assert t.status.reason == common_pb2.TASK_REASON_PREEMPTED, t.status
            assert t.status.message == f"{why} for job b0", t.status
        described = corral("describe", "task", taken[0].info.task_id, "--master", cluster.master)
        assert described.returncode == 0, described.stderr
        assert "PREEMPTED" in described.stdout and "queue team-b reclaims" in described.stdout
        history = (await s.ok("GET", "/v1/jobs/a2/history"))["history"]
        assert [h["message"] for h in history if h["kind"] == "Preempted"] == [
            f"2 of 2 running tasks killed as preempted: {why} for job b0"
        ], history
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


async def test_a_gang_is_admitted_only_whole_and_strict_against_best_effort_fifo(
    tmp_path: Path, cluster: LocalCluster
) -> None:
    s = await start(
        tmp_path,
        cluster,
        {
            "cluster_queues": [
                queue("gangs", 3),
                queue("strict", 2, strategy="StrictFIFO"),
                queue("best", 2, strategy="BestEffortFIFO"),
            ]
        },
    ).wait_ready()
    gang = {"workers": 4, "steps": 1, "cpus": 1, "mem": 32, "command": "exec sleep 120"}
    try:
        # 4 workers of 1 cpu in a queue of 3: nothing of it is admitted, and it says why.
        await s.ok("POST", "/v1/jobs", {"name": "big-gang", "queue": "gangs", **gang})
        await s.ok("POST", "/v1/jobs", {"name": "pair", "queue": "gangs", **gang, "workers": 2})
        pair = await s.wait_phase("pair", "Admitted")
        await until_async(
            lambda: _live_count(cluster, pair["framework_id"], 2), 30, "both workers live", s.logs
        )
        big = await s.job("big-gang")
        assert big["phase"] == "Pending" and big["framework_id"] == ""
        assert big["reason"] == "queue gangs needs 4 cpus, 1 free nominal", big
        assert len(await live_by_framework(cluster)) == 1  # no framework of the big gang

        # StrictFIFO: a head that does not fit holds back the small job behind it;
        # BestEffortFIFO lets the small one by.
        for q in ("strict", "best"):
            await s.ok("POST", "/v1/jobs", batch(f"{q}-running", q, 1, "exec sleep 120"))
            await s.wait_phase(f"{q}-running", "Admitted")
            await s.ok("POST", "/v1/jobs", batch(f"{q}-big", q, 2, "exec sleep 120"))
            await s.ok("POST", "/v1/jobs", batch(f"{q}-small", q, 1, "exec sleep 120"))
        await s.wait_phase("best-small", "Admitted")
        strict_small = await s.job("strict-small")
        assert strict_small["phase"] == "Pending" and strict_small["position"] == 1
        assert strict_small["reason"] == (
            "queue strict is StrictFIFO and 1 job wait ahead of it (head: strict-big)"
        )
        assert (await s.job("best-big"))["phase"] == "Pending"
        listed = s.corral("list", "--queue", "strict")
        assert listed.returncode == 0, listed.stderr
        assert [line.split()[0] for line in listed.stdout.splitlines()[1:]] == [
            "strict-running",
            "strict-big",
            "strict-small",
        ]
    finally:
        s.stop()


async def _live_count(cluster: LocalCluster, framework_id: str, n: int) -> bool:
    return (await live_by_framework(cluster)).get(framework_id, 0) == n


async def test_kill_9_and_restart_keeps_the_running_job_and_the_queue_order(
    tmp_path: Path, cluster: LocalCluster
) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    # Each task appends its id to a file of its stage and index: a task run twice leaves two
    # lines. Stage 1 holds long enough for the service to die and come back under it.
    mark = f"echo $CORRAL_TASK_ID >> {marks}/$CORRAL_STAGE-$CORRAL_TASK_INDEX"
    job = {
        "name": "etl",
        "queue": "q",
        "stages": [
            {"name": "map", "tasks": 2, "cpus": 1, "mem": 32, "command": f"{mark}; sleep 6"},
            {"name": "reduce", "tasks": 1, "cpus": 1, "mem": 32, "command": mark},
        ],
    }
    config = {"cluster_queues": [queue("q", 2)]}
    s = await start(tmp_path, cluster, config).wait_ready()
    try:
        await s.ok("POST", "/v1/jobs", job)
        for name in ("second", "third"):
            await s.ok("POST", "/v1/jobs", batch(name, "q", 2, "true"))
        before = await s.wait_phase("etl", "Admitted")
        await until_async(
            lambda: _live_count(cluster, before["framework_id"], 2), 30, "map's tasks", s.logs
        )
        assert [(await s.job(n))["position"] for n in ("second", "third")] == [0, 1]
        s.kill9()
        # Nothing of the job stopped with the service.
        assert (await live_by_framework(cluster)).get(before["framework_id"]) == 2
    finally:
        s.stop()
    s = await start(tmp_path, cluster, config).wait_ready()
    try:
        again = await s.job("etl")
        assert again["framework_id"] == before["framework_id"]
        assert again["phase"] in ("Admitted", "QuotaReserved", "Succeeded")
        assert [(await s.job(n))["position"] for n in ("second", "third")] in ([0, 1], [None, 0])
        done = await s.wait_phase("etl", "Succeeded", timeout=90)
        assert done["progress"]["succeeded"] == 3 and done["progress"]["attempts"] == 3, done
        for name in ("map-0", "map-1", "reduce-0"):
            lines = (marks / name).read_text().split()
            assert len(lines) == 1, f"{name} ran {len(lines)} times: {lines}"
        # The queue goes on in its order.
        await s.wait_phase("second", "Succeeded", timeout=60)
        await s.wait_phase("third", "Succeeded", timeout=60)
        hist = (await s.ok("GET", "/v1/jobs/second/history"))["history"]
        third = (await s.ok("GET", "/v1/jobs/third/history"))["history"]
        admitted = [h["at"] for h in hist if h["kind"] == "QuotaReserved"]
        assert admitted[0] < next(h["at"] for h in third if h["kind"] == "QuotaReserved")
    finally:
        s.stop()


def acl_rules(version: str, bob_queues: list[str]) -> dict[str, Any]:
    """The master's ACL file: bob, a framework certificate of the cluster's CA, may submit to
    ``bob_queues`` only, with class batch; the job service (admin, an operator) may launch for
    anyone. The job service reads no ACL: it asks the master (Operator.Review)."""
    return {
        "version": version,
        "rules": [
            {
                "name": "ops",
                "cert_roles": ["operator"],
                "operator": ["*"],
                "frameworks": {
                    "roles": ["*"],
                    "priority_classes": ["*"],
                    "tolerations": ["*"],
                },
                "agents": {"attributes": {"*": ["*"]}, "reservations": ["*"]},
                "jobs": {"queues": ["*"]},
                "act_for": ["*"],
                "launch_for": ["*"],
            },
            {
                "name": "team-b",
                "principals": ["bob"],
                "frameworks": {"roles": ["*"], "priority_classes": ["batch"]},
                "jobs": {"queues": bob_queues},
            },
        ],
    }


@contextlib.asynccontextmanager
async def acl_cluster(tmp_path: Path) -> AsyncIterator[tuple[LocalCluster, Path, Path]]:
    """A TLS cluster whose master reads ``acls.yaml`` (version jobs-1, bob: team-b), and bob's
    certificate directory."""
    acls = tmp_path / "acls.yaml"
    acls.write_text(json.dumps(acl_rules("jobs-1", ["team-b"])))
    async with LocalCluster(
        agents=2,
        agent_resources="cpus:4;mem:4096;disk:1000;ports:{ports}",
        work_dir=tmp_path / "cluster",
        master_args=(*FAST, "--acls", str(acls)),
        agent_args=("--hostname", "127.0.0.1"),
    ) as cluster:
        await cluster.wait_for_agents(2, 30)
        bob = tmp_path / "bob"
        issued = corral(
            *("certs", "issue", "bob", "--role", "framework"),
            *("--dir", str(sdk_tls.home() / "ca"), "--out", str(bob)),
        )
        assert issued.returncode == 0, issued.stderr
        yield cluster, acls, bob


async def denied_events(cluster: LocalCluster) -> list[str]:
    """The messages of the master's Denied events (its audit trail of refusals)."""
    async with cluster.channel() as ch:
        stub = operator_pb2_grpc.OperatorStub(ch)  # type: ignore[no-untyped-call]
        got = await stub.GetEvents(operator_pb2.GetEventsRequest(reason="Denied"), timeout=10)
    return [e.message for e in got.events]


async def test_cancel_a_tenant_refused_a_queue_and_bad_job_files(tmp_path: Path) -> None:
    async with acl_cluster(tmp_path) as (cluster, _acls, bob):
        await _cancel_tenants_and_bad_files(tmp_path, cluster, bob)


async def test_a_changed_master_acl_file_changes_the_queues_a_tenant_may_submit_to(
    tmp_path: Path,
) -> None:
    """Who may submit to which queue is the master's answer: the master reloads its file and
    the job service, untouched, answers by the new one at the next submission."""
    async with acl_cluster(tmp_path) as (cluster, acls, bob):
        s = await start(
            tmp_path, cluster, {"cluster_queues": [queue("team-a", 8), queue("team-b", 8)]}
        ).wait_ready()
        try:
            job_file = tmp_path / "bob-job.json"
            as_bob = ("--tls-dir", str(bob))

            def submit(name: str, queue_name: str) -> subprocess.CompletedProcess[str]:
                job_file.write_text(json.dumps(batch(name, queue_name, 1, "true")))
                return s.corral("submit", "-f", str(job_file), *as_bob)

            refused = submit("first", "team-a")
            assert refused.returncode == 1, refused.stderr
            assert "principal bob may not submit jobs to queue team-a" in refused.stderr
            assert "(ACL jobs-1)" in refused.stderr
            # Granted team-a, and team-b taken away, in the master's file only.
            acls.write_text(json.dumps(acl_rules("jobs-2", ["team-a"])))
            await until_async(
                lambda: _acl_version(cluster, "jobs-2"), 30, "the master's reload", s.logs
            )
            ok = submit("first", "team-a")
            assert ok.returncode == 0, ok.stderr
            assert ok.stdout.startswith("job first submitted in queue team-a")
            refused = submit("second", "team-b")
            assert refused.returncode == 1, refused.stderr
            assert refused.stderr.strip() == (
                "corral job: principal bob may not submit jobs to queue team-b: no rule grants "
                "it (deny by default) (ACL jobs-2)"
            )
            assert "second" not in [j["name"] for j in (await s.ok("GET", "/v1/jobs"))["jobs"]]
            assert (await s.wait_phase("first", "Succeeded"))["owner"] == "bob"
        finally:
            s.stop()


async def _acl_version(cluster: LocalCluster, version: str) -> bool:
    return (await cluster.state()).acls.version == version


async def _cancel_tenants_and_bad_files(tmp_path: Path, cluster: LocalCluster, bob: Path) -> None:
    s = await start(
        tmp_path, cluster, {"cluster_queues": [queue("team-a", 8), queue("team-b", 8)]}
    ).wait_ready()
    try:
        # Cancel a running job: its framework and tasks leave the master.
        await s.ok("POST", "/v1/jobs", batch("long", "team-a", 2, "exec sleep 120"))
        long = await s.wait_phase("long", "Admitted")
        await until_async(
            lambda: _live_count(cluster, long["framework_id"], 2), 30, "its tasks", s.logs
        )
        done = s.corral("cancel", "long")
        assert done.returncode == 0, done.stderr
        await s.wait_phase("long", "Cancelled")
        await until_async(
            lambda: _live_count(cluster, long["framework_id"], 0), 30, "its tasks gone", s.logs
        )
        # Cancel a suspended one, and resume another in its old place.
        await s.ok("POST", "/v1/jobs", batch("later", "team-a", 1, "true", suspend=True))
        assert (await s.job("later"))["phase"] == "Suspended"
        assert s.corral("cancel", "later").returncode == 0
        assert (await s.job("later"))["phase"] == "Cancelled"
        again = s.corral("cancel", "later")
        assert again.returncode == 2 and "job later has ended (Cancelled)" in again.stderr

        # bob may submit to team-b, not to team-a: the master says so (Operator.Review, for the
        # caller), names the rule, and records the refusal in its audit trail.
        job_file = tmp_path / "bob-job.json"
        job_file.write_text(json.dumps(batch("bobs", "team-a", 1, "true")))
        as_bob = ("--tls-dir", str(bob))
        refused = s.corral("submit", "-f", str(job_file), *as_bob)
        assert refused.returncode == 1
        assert refused.stderr.strip() == (
            "corral job: principal bob may not submit jobs to queue team-a: no rule grants it "
            "(deny by default) (ACL jobs-1)"
        )
        assert any("submit jobs to queue team-a" in m for m in await denied_events(cluster))
        job_file.write_text(json.dumps(batch("bobs", "team-b", 1, "true")))
        ok = s.corral("submit", "-f", str(job_file), *as_bob)
        assert ok.returncode == 0, ok.stderr
        assert ok.stdout.startswith("job bobs submitted in queue team-b")
        bobs = await s.wait_phase("bobs", "Succeeded")
        assert bobs["owner"] == "bob"
        # A class bob is not granted, even in his queue: the master says so, for the owner,
        # although the service's own principal could use it.
        serving = batch("bobs2", "team-b", 1, "true", priority_class="serving")
        job_file.write_text(json.dumps(serving))
        refused = s.corral("submit", "-f", str(job_file), *as_bob)
        assert refused.returncode == 1, refused.stderr
        assert refused.stderr.strip() == (
            "corral job: job bobs2 refused by the master for its owner: principal bob may not "
            "use priority class serving: no rule grants it (deny by default) (ACL jobs-1)"
        )
        # bob sees his own jobs only, and may not touch another's.
        listed = s.corral("list", "-o", "json", *as_bob)
        assert [j["name"] for j in json.loads(listed.stdout)] == ["bobs"]
        ended = s.corral("cancel", "bobs", *as_bob)
        assert ended.returncode == 2 and "has ended (Succeeded)" in ended.stderr
        other = s.corral("get", "long", *as_bob)
        assert other.returncode == 1
        assert other.stderr.strip() == (
            "corral job: bob may not read job long: it is admin's, and the master says: "
            "principal bob may not act for admin: no rule grants it (deny by default) "
            "(ACL jobs-1)"
        )
        # The admin (act_for *) sees both.
        every = s.corral("list", "-o", "json")
        assert {"long", "bobs"} <= {j["name"] for j in json.loads(every.stdout)}

        # Bad job files: one line each, exit 2, nothing queued.
        bad = tmp_path / "bad.json"
        cases = {
            "{not json": "bad.json: not JSON",
            json.dumps(["a list"]): "the job must be an object, got list",
            json.dumps({**batch("x", "team-a", 1, "true"), "colour": "red"}): (
                "unknown job keys: ['colour']"
            ),
            json.dumps(batch("x", "nowhere", 1, "true")): (
                "queue: no queue 'nowhere' (queues: team-a, team-b)"
            ),
            json.dumps({"name": "x", "workers": 2}): "steps: required for a gang",
            json.dumps({**batch("x", "team-a", 1, "true"), "schedule": "every day"}): (
                "not a cron expression: 'every day'"
            ),
        }
        for text, message in cases.items():
            bad.write_text(text)
            got = s.corral("submit", "-f", str(bad))
            assert got.returncode == 2, (text, got.stdout, got.stderr)
            assert len(got.stderr.strip().splitlines()) == 1, got.stderr
            assert message in got.stderr, (message, got.stderr)
        assert "x" not in [j["name"] for j in (await s.ok("GET", "/v1/jobs"))["jobs"]]
    finally:
        s.stop()
