"""Periodic jobs (frameworks/jobs/cron.py: CronJob's rules, time as an argument) and job files
(frameworks/jobs/spec.py)."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corral.frameworks.jobs.cron import (
    MAX_MISSED,
    ConcurrencyPolicy,
    FinishedRun,
    Schedule,
    decide,
    prune,
    run_name,
)
from corral.frameworks.jobs.spec import JobFile
from corral.frameworks.placement_args import docker_agents

BERLIN = ZoneInfo("Europe/Berlin")


def at(*args: int, zone: ZoneInfo = BERLIN) -> float:
    return datetime(*args, tzinfo=zone).timestamp()  # type: ignore[misc]


def test_a_run_starts_at_its_time_in_its_zone() -> None:
    s = Schedule("0 3 * * *", time_zone="Europe/Berlin")
    created = at(2026, 6, 1, 12)
    d = decide("nightly", s, created, None, at(2026, 6, 2, 2, 59), [])
    assert d.start is None and d.next_at == at(2026, 6, 2, 3)
    d = decide("nightly", s, created, None, at(2026, 6, 2, 3, 0, 5), [])
    assert d.start == at(2026, 6, 2, 3)
    assert d.run_name == run_name("nightly", d.start) == f"nightly-{int(d.start // 60)}"
    assert d.notes == ("started nightly-" + str(int(d.start // 60)) + " for 2026-06-02 03:00 CEST",)


def test_missed_runs_after_an_outage_start_the_most_recent_once_and_say_so() -> None:
    s = Schedule("0 * * * *")
    last = at(2026, 6, 1, 0, zone=ZoneInfo("UTC"))
    now = at(2026, 6, 1, 5, 30, zone=ZoneInfo("UTC"))  # 5 runs missed: 01:00 .. 05:00
    d = decide("hourly", s, 0.0, last, now, [])
    assert d.start == at(2026, 6, 1, 5, zone=ZoneInfo("UTC"))
    assert d.notes[0] == (
        "missed 4 earlier runs (2026-06-01 01:00 UTC to 2026-06-01 04:00 UTC) while the "
        "service was not running; only the most recent is started, as CronJob does"
    )
    # The same step again (a restart before the run was recorded) makes nothing twice.
    again = decide("hourly", s, 0.0, last, now, [], existing=frozenset({d.run_name}))
    assert again.start is None and again.last_schedule == d.start


def test_starting_deadline_drops_runs_too_late_to_start() -> None:
    utc = ZoneInfo("UTC")
    s = Schedule("0 * * * *", starting_deadline=600)
    last = at(2026, 6, 1, 0, zone=utc)
    d = decide("j", s, 0.0, last, at(2026, 6, 1, 5, 30, zone=utc), [])
    assert d.start is None  # 05:00 is 30 min ago, past 10 min
    assert d.notes == ("5 runs not started: past the starting deadline of 600 s",)
    assert d.last_schedule == at(2026, 6, 1, 5, zone=utc)  # said once
    d = decide("j", s, 0.0, last, at(2026, 6, 1, 5, 5, zone=utc), [])
    assert d.start == at(2026, 6, 1, 5, zone=utc)


def test_too_many_missed_start_times() -> None:
    s = Schedule("* * * * *")
    d = decide("j", s, 0.0, 0.0, 200 * 60.0 + 1, [])
    assert d.start == 200 * 60.0
    assert d.notes[0].startswith(f"too many missed start times (more than {MAX_MISSED})")


@pytest.mark.parametrize("policy", list(ConcurrencyPolicy))
def test_concurrency_policies(policy: ConcurrencyPolicy) -> None:
    s = Schedule("*/5 * * * *", concurrency_policy=policy)
    d = decide("j", s, 0.0, 0.0, 300.0, ["j-0"])
    if policy is ConcurrencyPolicy.FORBID:
        assert d.start is None and d.last_schedule is None  # kept: starts when j-0 ends
        assert "waits: j-0 is still running (concurrency_policy Forbid)" in d.notes[-1]
        later = decide("j", s, 0.0, 0.0, 320.0, [])
        assert later.start == 300.0
    elif policy is ConcurrencyPolicy.REPLACE:
        assert d.start == 300.0 and d.cancel == ("j-0",)
    else:
        assert d.start == 300.0 and d.cancel == ()


def test_suspended_schedule_starts_nothing() -> None:
    s = Schedule("* * * * *", suspend=True)
    assert decide("j", s, 0.0, 0.0, 1e6, []).start is None


def test_daylight_saving_gap_runs_once() -> None:
    # 02:30 does not exist in Berlin on 2026-03-29: croniter runs it at 03:00, once.
    s = Schedule("30 2 * * *", time_zone="Europe/Berlin")
    times = s.times(at(2026, 3, 28, 12), at(2026, 3, 30, 12), 10)
    assert [datetime.fromtimestamp(t, BERLIN).strftime("%d %H:%M") for t in times] == [
        "29 03:00",
        "30 02:30",
    ]


def test_history_limits() -> None:
    s = Schedule("* * * * *", successful_jobs_history_limit=2, failed_jobs_history_limit=1)
    runs = [FinishedRun(f"r{i}", i % 3 != 0, float(i)) for i in range(7)]
    assert sorted(prune(s, runs)) == ["r0", "r1", "r2", "r3"]  # keeps r4, r5 and r6


@settings(max_examples=60, deadline=None)
@given(
    last=st.integers(0, 10_000_000),
    gap=st.integers(0, 100_000),
    minutes=st.sampled_from(["*", "*/7", "13", "0"]),
)
def test_the_run_started_is_the_latest_time_not_after_now(
    last: int, gap: int, minutes: str
) -> None:
    s = Schedule(f"{minutes} * * * *")
    now = float(last + gap)
    d = decide("j", s, 0.0, float(last), now, [])
    if d.start is None:
        assert s.next_after(float(last)) > now
    else:
        assert last < d.start <= now < s.next_after(d.start)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"cron": "61 * * * *"}, "schedule.cron: not a cron expression: '61 * * * *'"),
        ({"cron": "* * * * *", "time_zone": "Mars/Olympus"}, "unknown time zone 'Mars/Olympus'"),
        (
            {"cron": "* * * * *", "concurrency_policy": "Sometimes"},
            "must be Allow, Forbid or Replace",
        ),
        (
            {"cron": "* * * * *", "starting_deadline": 0},
            "starting_deadline: must be a number of seconds > 0",
        ),
        ({"cron": "* * * * *", "every": 3}, "schedule: unknown field 'every'"),
    ],
)
def test_bad_schedules(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as err:
        Schedule.from_json(raw)
    assert message in str(err.value)


# -- job files ------------------------------------------------------------------------------


def test_batch_job_request_is_the_biggest_stage_within_max_cpus() -> None:
    job = JobFile.from_json(
        {
            "name": "etl",
            "queue": "team-a",
            "max_cpus": 8,
            "stages": [
                {"name": "map", "tasks": 100, "cpus": 0.5, "mem": 256, "duration": 1},
                {"name": "reduce", "tasks": 2, "cpus": 2, "mem": 4096, "gpus": 1, "duration": 1},
            ],
        }
    )
    assert job.kind == "batch" and job.queue == "team-a" and job.priority_class == "batch"
    # map: 16 at once (8 cpus / 0.5) -> 8 cpus, 4096 mem; reduce: 2 -> 4 cpus, 8192 mem, 2 gpus
    assert job.request == (8.0, 8192.0, 0.0, 2.0)


def test_gang_job_request_is_every_worker() -> None:
    job = JobFile.from_json(
        {
            "name": "train",
            "workers": 4,
            "steps": 10,
            "gpus": 1,
            "cpus": 2,
            "mem": 512,
            "constraints": ["gpu-sku=a100"],
            "schedule": "0 * * * *",
        }
    )
    assert job.kind == "gang" and job.request == (8.0, 2048.0, 0.0, 4.0)
    assert job.schedule is not None and job.schedule.cron == "0 * * * *"
    assert job.allows_flavor({"gpu-sku": "a100"}) and not job.allows_flavor({"gpu-sku": "t4"})
    assert job.allows_flavor({})


def test_a_job_in_a_container_runs_its_tasks_in_the_image_on_agents_that_run_images() -> None:
    stages = [{"name": "s", "tasks": 2, "cpus": 1, "mem": 64, "command": "true"}]
    batch = JobFile.from_json({"name": "etl", "stages": stages, "container": {"image": "etl:1"}})
    assert batch.batch is not None and batch.batch.image == "etl:1"
    assert docker_agents() in batch.batch.constraints
    gang = JobFile.from_json(
        {"name": "train", "workers": 2, "steps": 3, "container": {"image": "trainer:2"}}
    )
    assert gang.gang is not None and gang.gang.image == "trainer:2"
    assert docker_agents() in gang.gang.constraints
    plain = JobFile.from_json({"name": "etl", "stages": stages})
    assert plain.batch is not None and plain.batch.image == ""
    assert docker_agents() not in plain.batch.constraints


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ([], "a job is an object, got list"),
        ({"name": "Bad Name", "stages": []}, "name: required, lower-case letters"),
        ({"name": "x"}, "kind: batch (give stages) or gang (give workers and steps)"),
        (
            {"name": "x", "stages": [{"tasks": 0, "duration": 1}]},
            "tasks must be a whole number >= 1",
        ),
        (
            {"name": "x", "stages": [{"tasks": 1, "duration": 1}], "colour": 1},
            "unknown job keys: ['colour']",
        ),
        ({"name": "x", "workers": 2}, "steps: required for a gang"),
        ({"name": "x", "workers": 2, "steps": 1, "lr": 1}, "unknown gang field 'lr'"),
        ({"name": "x", "workers": 0, "steps": 1}, "workers must be at least 1"),
        ({"name": "x", "workers": 1, "steps": 1, "queue": 3}, "queue: must be a queue's name"),
        (
            {"name": "x", "workers": 1, "steps": 1, "container": "img"},
            'container: {"image": "NAME"}',
        ),
        (
            {"name": "x", "workers": 1, "steps": 1, "container": {"image": "a b"}},
            'container: {"image": "NAME"}',
        ),
        (
            {"name": "x", "workers": 1, "steps": 1, "container": {"image": "a", "x": 1}},
            'container: {"image": "NAME"}',
        ),
        (
            {
                "name": "x",
                "stages": [{"tasks": 1, "duration": 1}],
                "image": "a",
                "container": {"image": "b"},
            },
            "give the image once",
        ),
        (
            {"name": "x", "workers": 1, "steps": 1, "schedule": {"cron": "bad"}},
            "not a cron expression",
        ),
    ],
)
def test_bad_job_files_name_the_field(raw: Any, message: str) -> None:
    with pytest.raises(ValueError) as err:
        JobFile.from_json(raw)
    assert message in str(err.value)
