"""The job service's parts without a master (frameworks/jobs/service.py, store.py): periodic
jobs' runs made by the service's step with a manual clock (into a queue that admits nothing,
so no framework starts), the records a restart reads back, and the service's refusals."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from corral.frameworks.jobs.queues import QueueConfig
from corral.frameworks.jobs.service import JobError, JobExists, JobService, UnknownJob
from corral.frameworks.jobs.store import JobStore
from corral.frameworks.service.http_api import Caller
from corral.frameworks.service.records import Records
from corral.frameworks.service.sqlite_records import SqliteRecords

ADMIN = Caller("admin", frozenset({"operator"}), True)
# Jobs ask for cpus; the queue has none: nothing is ever admitted, nothing reaches a master.
CONFIG = {"cluster_queues": [{"name": "q", "resources": {"default": {"cpus": 0}}}]}


def utc(*args: int) -> float:
    return datetime(*args, tzinfo=UTC).timestamp()  # type: ignore[misc]


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def service(tmp_path: Path, clock: Clock) -> JobService:
    records = Records(SqliteRecords(tmp_path / "jobs.db"))
    return JobService(
        JobStore(records),
        QueueConfig.from_json(CONFIG),
        "127.0.0.1:1",
        state_dir=tmp_path,
        clock=clock,
    )


def job(name: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "queue": "q",
        "stages": [{"name": "s", "tasks": 1, "cpus": 1, "command": "true"}],
        **extra,
    }


def history(s: JobService, name: str) -> list[tuple[str, str]]:
    return [(h["kind"], h["message"]) for h in s.store.history(name)]


async def test_a_periodic_job_makes_one_run_per_time_and_after_an_outage_the_latest_once(
    tmp_path: Path,
) -> None:
    clock = Clock(utc(2026, 6, 1, 0, 0, 30))
    s = service(tmp_path, clock)
    schedule = {"cron": "*/10 * * * *", "concurrency_policy": "Allow"}
    await s.submit(job("tick", schedule=schedule), ADMIN)
    assert (await s.get("tick", ADMIN))["phase"] == "Scheduled"
    s.step()
    assert (await s.get("tick", ADMIN))["runs"] == []
    clock.t = utc(2026, 6, 1, 0, 10, 1)
    s.step()
    s.step()  # the same time again makes nothing
    first = f"tick-{int(utc(2026, 6, 1, 0, 10) // 60)}"
    assert (await s.get("tick", ADMIN))["runs"] == [first]
    assert (await s.get(first, ADMIN))["phase"] == "Pending"
    assert (await s.get(first, ADMIN))["reason"] == "queue q needs 1 cpus, 0 free nominal"
    # The service is down from 00:15 to 00:52: 00:20 .. 00:50 missed; only 00:50 starts.
    clock.t = utc(2026, 6, 1, 0, 52)
    s.step()
    latest = f"tick-{int(utc(2026, 6, 1, 0, 50) // 60)}"
    assert (await s.get("tick", ADMIN))["runs"] == [first, latest]
    notes = [m for k, m in history(s, "tick") if k == "Schedule"]
    assert notes[-2] == (
        "missed 3 earlier runs (2026-06-01 00:20 UTC to 2026-06-01 00:40 UTC) while the "
        "service was not running; only the most recent is started, as CronJob does"
    )
    assert notes[-1].startswith(f"started {latest} for 2026-06-01 00:50 UTC")
    # A restarted service reads the same back and makes nothing twice.
    s2 = service(tmp_path, clock)
    s2.step()
    assert (await s2.get("tick", ADMIN))["runs"] == [first, latest]


async def test_forbid_waits_for_the_active_run_and_replace_cancels_it(tmp_path: Path) -> None:
    clock = Clock(utc(2026, 6, 1, 0, 0, 30))
    s = service(tmp_path, clock)
    await s.submit(
        job("f", schedule={"cron": "*/10 * * * *", "concurrency_policy": "Forbid"}), ADMIN
    )
    await s.submit(
        job("r", schedule={"cron": "*/10 * * * *", "concurrency_policy": "Replace"}), ADMIN
    )
    clock.t = utc(2026, 6, 1, 0, 10, 1)
    s.step()
    clock.t = utc(2026, 6, 1, 0, 20, 1)
    s.step()
    assert len((await s.get("f", ADMIN))["runs"]) == 1  # the first still waits in its queue
    assert "(concurrency_policy Forbid)" in history(s, "f")[-1][1]
    runs = (await s.get("r", ADMIN))["runs"]
    assert len(runs) == 2
    assert (await s.get(runs[0], ADMIN))["phase"] == "Cancelled"
    assert "(concurrency_policy Replace)" in (await s.get(runs[0], ADMIN))["reason"]


async def test_pending_jobs_come_back_in_their_order(tmp_path: Path) -> None:
    clock = Clock(1000.0)
    s = service(tmp_path, clock)
    for name, pclass in (("a", "batch"), ("b", "batch"), ("urgent", "serving")):
        clock.t += 1
        await s.submit(job(name, priority_class=pclass), ADMIN)
    s.step()
    await s.suspend("b", ADMIN)
    order = [(j["name"], j["position"]) for j in (await s.jobs(ADMIN))]
    assert order == [("a", 1), ("b", None), ("urgent", 0)]
    s2 = service(tmp_path, clock)
    await s2.start()
    await s2.close()
    assert [(j["name"], j["position"]) for j in (await s2.jobs(ADMIN))] == order
    await s2.resume("b", ADMIN)
    assert (await s2.get("b", ADMIN))["position"] == 2  # behind a: its old place by submission


@pytest.mark.parametrize(
    ("body", "error", "message"),
    [
        (job("x", queue="nope"), JobError, "queue: no queue 'nope' (queues: q)"),
        (job("x", priority_class="gold"), JobError, "priority_class: unknown class 'gold'"),
        (job("x", container={"image": "a b"}), JobError, 'container: {"image": "NAME"}'),
        ({"name": "x"}, JobError, "kind: batch (give stages)"),
    ],
)
async def test_refusals(tmp_path: Path, body: Any, error: type[Exception], message: str) -> None:
    s = service(tmp_path, Clock(0.0))
    with pytest.raises(error) as err:
        await s.submit(body, ADMIN)
    assert message in str(err.value)


async def test_names_are_unique_and_unknown_jobs_are_404(tmp_path: Path) -> None:
    s = service(tmp_path, Clock(0.0))
    await s.submit(job("x"), ADMIN)
    with pytest.raises(JobExists):
        await s.submit(job("x"), ADMIN)
    with pytest.raises(UnknownJob):
        await s.cancel("nope", ADMIN)
