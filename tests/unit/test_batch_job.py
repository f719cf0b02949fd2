"""The batch framework's job model and scheduler without a master: stage ordering, retries,
max_cpus, the binpack choice, the demand it keeps, and job files."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import grpc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corral.frameworks import sdk
from corral.frameworks.batch.cli import spec_from_args
from corral.frameworks.batch.job import (
    Job,
    JobSpec,
    Outcome,
    Room,
    Stage,
    binpack_order,
    plan,
)
from corral.frameworks.batch.scheduler import LONG_REFUSE_SECONDS, BatchScheduler


def spec(*stages: Stage, **kw: Any) -> JobSpec:
    return JobSpec("j", stages, **kw)


def run_all(job: Job, succeed: bool = True) -> list[str]:
    """End what is live, launch everything launchable and end it; the task ids, in order."""
    ids = []
    while not job.done:
        attempts = [*job.live.values(), *job.take(1000)]
        assert attempts, "a job that is not done has something live or to launch"
        for a in attempts:
            ids.append(a.task_id)
            job.ended(a.task_id, succeeded=succeed, disrupted=False)
    return ids


def test_stage_k_starts_only_when_stage_k_minus_1_has_ended() -> None:
    job = Job(spec(Stage("map", 3, duration=1), Stage("reduce", 2, duration=1)))
    first = job.take(10)
    assert [a.task_id for a in first] == ["map-0.0", "map-1.0", "map-2.0"]
    assert job.take(10) == []  # reduce waits for every map
    job.ended("map-0.0", True, False)
    job.ended("map-1.0", True, False)
    assert job.take(10) == [] and job.current.name == "map"
    job.ended("map-2.0", True, False)
    assert job.current.name == "reduce"
    assert [a.task_id for a in job.take(10)] == ["reduce-0.0", "reduce-1.0"]


def test_a_runs_token_ends_each_of_its_task_ids_retries_included() -> None:
    job = Job(spec(Stage("map", 2, duration=1)), run="5be1c2")
    first = job.take(10)
    assert [a.task_id for a in first] == ["map-0.0-5be1c2", "map-1.0-5be1c2"]
    assert job.ended("map-0.0-5be1c2", succeeded=False, disrupted=True) is Outcome.RETRY
    assert [a.task_id for a in job.take(10)] == ["map-0.1-5be1c2"]


def test_each_batch_scheduler_is_a_run_of_its_own() -> None:
    tokens = {BatchScheduler(spec(Stage("s", 1, duration=1))).job.run for _ in range(20)}
    assert len(tokens) == 20 and all(len(t) == 6 for t in tokens)
    assert BatchScheduler(spec(Stage("s", 1, duration=1)), run_id="").job.run == ""


def test_a_failed_task_is_retried_up_to_the_limit_and_a_disrupted_one_always() -> None:
    job = Job(spec(Stage("s", 1, duration=1), max_retries=1))
    (a,) = job.take(1)
    assert job.ended(a.task_id, succeeded=False, disrupted=True) is Outcome.RETRY
    (b,) = job.take(1)
    assert b.task_id == "s-0.1" and b.attempt == 1
    assert job.ended(b.task_id, succeeded=False, disrupted=False, error="FAILED") is Outcome.RETRY
    (c,) = job.take(1)
    # Disrupted again (preempted, drained, ...): not the task's fault, no retry spent.
    assert job.ended(c.task_id, succeeded=False, disrupted=True) is Outcome.RETRY
    (d,) = job.take(1)
    assert job.ended(d.task_id, succeeded=False, disrupted=False) is Outcome.GAVE_UP
    assert job.done
    counts = job.counts()
    assert (counts["retries"], counts["disruptions"], counts["failures"]) == (3, 2, 2)
    assert (counts["succeeded"], counts["failed"], counts["attempts"]) == (0, 1, 4)


def test_with_no_retries_a_drained_task_runs_again_and_a_failed_one_does_not() -> None:
    # Issue #40, defect 7: `corral drain` failed a --max-retries 0 job's tasks.
    job = Job(spec(Stage("s", 2, duration=1), max_retries=0))
    a, b = job.take(2)
    assert job.ended(a.task_id, succeeded=False, disrupted=True) is Outcome.RETRY
    assert job.ended(b.task_id, succeeded=False, disrupted=False) is Outcome.GAVE_UP
    (again,) = job.take(2)
    assert job.ended(again.task_id, succeeded=True, disrupted=False) is Outcome.SUCCEEDED
    assert job.counts()["succeeded"] == 1 and job.counts()["failed"] == 1


def test_a_retry_that_succeeds_counts_as_succeeded() -> None:
    job = Job(spec(Stage("s", 2, duration=1)))
    a, b = job.take(2)
    job.ended(a.task_id, succeeded=False, disrupted=True)
    job.ended(b.task_id, succeeded=True, disrupted=False)
    assert not job.done
    (again,) = job.take(5)
    assert job.ended(again.task_id, True, False) is Outcome.SUCCEEDED
    assert job.done and job.counts()["succeeded"] == 2


def test_duplicate_and_unknown_statuses_are_ignored() -> None:
    job = Job(spec(Stage("s", 2, duration=1)))
    a, _ = job.take(2)
    assert job.ended(a.task_id, True, False) is Outcome.SUCCEEDED
    assert job.ended(a.task_id, True, False) is Outcome.IGNORED  # delivered twice
    assert job.ended("someone-else", False, False) is Outcome.IGNORED
    assert job.counts()["succeeded"] == 1


def test_a_stage_that_gives_up_skips_the_later_stages_and_ends_the_job() -> None:
    job = Job(spec(Stage("a", 2, duration=1), Stage("b", 4, duration=1), max_retries=0))
    x, y = job.take(2)
    job.ended(x.task_id, False, False)
    assert not job.done  # y still runs
    job.ended(y.task_id, True, False)
    assert job.done
    c = job.counts()
    assert (c["tasks"], c["succeeded"], c["failed"], c["skipped"]) == (6, 1, 1, 4)
    assert job.ended_tasks() == 6


def test_a_refused_launch_is_not_an_attempt() -> None:
    job = Job(spec(Stage("s", 3, duration=1)))
    attempts = job.take(2)
    job.unlaunch(attempts)
    assert job.pending == 3 and not job.live and job.live_cpus == 0
    assert [a.task_id for a in job.take(3)] == ["s-0.0", "s-1.0", "s-2.0"]


def test_max_cpus_bounds_live_tasks_and_the_demand() -> None:
    job = Job(spec(Stage("s", 10, cpus=2, duration=1), max_cpus=5))
    assert job.wanted == 2  # 5 cpus hold two 2-cpu tasks
    first = job.take(10)
    assert len(first) == 2 and job.take(10) == []
    job.ended(first[0].task_id, True, False)
    assert len(job.take(10)) == 1
    assert run_all(job) and job.counts()["succeeded"] == 10


def test_the_job_service_asks_what_the_scheduler_will_want() -> None:
    """One rule (JobSpec.at_once) for the tasks held at once within max_cpus: the job
    service's demand and review size and the batch scheduler's own demand agree, float
    shares included (0.3 cpus: three fit in 0.9, not two)."""
    from corral.frameworks.jobs.runner import demands_of
    from corral.frameworks.jobs.spec import JobFile, batch_request

    s = spec(Stage("s", 10, cpus=0.3, duration=1), max_cpus=0.9)
    assert s.at_once(s.stages[0]) == 3
    assert Job(s).wanted == 3
    job = JobFile.from_json(
        {
            "name": "j",
            "stages": [{"name": "s", "tasks": 10, "cpus": 0.3, "duration": 1}],
            "max_cpus": 0.9,
        }
    )
    assert [d.count for d in demands_of(job)] == [3]
    assert job.batch is not None and batch_request(job.batch)[0] == pytest.approx(0.9)


def test_the_demand_is_live_plus_waiting() -> None:
    job = Job(spec(Stage("s", 5, duration=1), Stage("t", 2, cpus=3, duration=1)))
    assert job.wanted == 5
    a = job.take(3)
    assert job.wanted == 5  # launching does not change it: 3 live + 2 waiting
    job.ended(a[0].task_id, True, False)
    assert job.wanted == 4
    job.ended(a[1].task_id, False, True)  # retried: still wanted
    assert job.wanted == 4
    run_all(job)
    assert job.done and job.wanted == 0


def test_binpack_puts_tasks_on_the_fullest_fitting_room_first() -> None:
    stage = Stage("s", 1, cpus=1, mem=100, duration=1)
    rooms = [Room(8, 8000), Room(0.5, 8000), Room(2, 8000), Room(3, 150), Room(2, 4000)]
    # Room 1 holds no task; room 3 holds one (mem); rooms 2 and 4 hold two (the one with less
    # mem first); room 0 eight.
    assert binpack_order(rooms, stage) == [3, 4, 2, 0]
    assert plan(rooms, stage, 4) == [0, 0, 1, 1, 2]
    assert plan(rooms, stage, 100) == [8, 0, 2, 1, 2]


def test_job_files_and_their_mistakes(tmp_path: Path) -> None:
    path = tmp_path / "job.json"
    path.write_text(
        json.dumps(
            {
                "name": "wordcount",
                "max_retries": 5,
                "stages": [
                    {"name": "map", "tasks": 200, "cpus": 0.5, "mem": 64, "command": "./map"},
                    {"name": "reduce", "tasks": 4, "duration": 2},
                ],
            }
        )
    )
    job = JobSpec.load(path, max_cpus=8, max_retries=None)
    assert (job.name, job.max_retries, job.max_cpus, job.priority_class) == (
        "wordcount",
        5,
        8,
        "batch",
    )
    assert [s.name for s in job.stages] == ["map", "reduce"]
    assert job.stages[1].shell_command == "sleep 2" and job.total_tasks == 204
    for bad, message in [
        ({"stages": []}, "has no stages"),
        ({"stages": [{"tasks": 0, "duration": 1}]}, "tasks must be a whole number >= 1"),
        ({"stages": [{"tasks": 1}]}, "give a command or a duration"),
        ({"stages": [{"tasks": 1, "duration": 1, "cpu": 2}]}, "unknown keys ['cpu']"),
        ({"stages": [{"tasks": 1, "duration": 1, "cpus": -1}]}, ">= 0"),
        ({"stages": [{"tasks": 1, "duration": 1, "cpus": 4}], "max_cpus": 2}, "exceed max_cpus"),
        ({"stages": [{"name": "a", "tasks": 1, "duration": 1}] * 2}, "must be unique"),
        ({"stage": []}, "unknown job keys"),
    ]:
        path.write_text(json.dumps(bad))
        with pytest.raises(ValueError, match=None) as err:
            JobSpec.load(path)
        assert message in str(err.value), (bad, str(err.value))
    with pytest.raises(ValueError, match="cannot read the job file"):
        JobSpec.load(tmp_path / "missing.json")


def _args(**kw: Any) -> argparse.Namespace:
    base = {
        "tasks": None,
        "job": None,
        "cpus": None,
        "mem": None,
        "command": None,
        "duration": None,
        "name": None,
        "max_cpus": None,
        "max_retries": None,
        "priority_class": None,
        "revocable": None,
        "gpus": None,
        "toleration": [],
        "constraint": [],
        "image": None,
    }
    return argparse.Namespace(**{**base, **kw})


def test_the_command_line_makes_a_one_stage_job() -> None:
    job = spec_from_args(_args(tasks=40, cpus=0.5, max_cpus=4))
    (stage,) = job.stages
    assert (stage.tasks, stage.cpus, stage.mem, stage.duration) == (40, 0.5, 128, 1.0)
    assert (job.name, job.max_cpus, job.max_retries, job.priority_class) == ("batch", 4, 3, "batch")
    job = spec_from_args(_args(tasks=2, command="true", priority_class="default"))
    assert (job.stages[0].shell_command, job.stages[0].duration) == ("true", None)
    assert job.priority_class == "default"
    with pytest.raises(ValueError, match="--cpus describe --tasks"):
        spec_from_args(_args(job="x.json", cpus=2))
    assert not job.revocable
    assert spec_from_args(_args(tasks=2, revocable=True)).revocable
    assert JobSpec.from_dict({"stages": [{"tasks": 1, "duration": 1}], "revocable": True}).revocable


def test_gpus_tolerations_and_constraints_from_the_command_line_and_a_job_file() -> None:
    # Issue #40, defect 5: batch jobs could not ask for a GPU or tainted pool.
    job = spec_from_args(
        _args(
            tasks=2,
            gpus=1,
            toleration=["gpu-sku=inference:NoSchedule"],
            constraint=["gpu-sku=inference", "zone=a,b"],
        )
    )
    assert job.stages[0].gpus == 1
    assert job.tolerations == (sdk.Toleration.equal("gpu-sku", "inference", "NoSchedule"),)
    assert job.constraints == (
        sdk.Constraint.equals("gpu-sku", "inference"),
        sdk.Constraint.one_of("zone", "a", "b"),
    )
    (demand,) = BatchScheduler(job).demands()
    assert (demand.gpus, demand.tolerations, demand.constraints) == (
        1,
        job.tolerations,
        job.constraints,
    )
    from_file = JobSpec.from_dict(
        {"stages": [{"tasks": 1, "duration": 1, "gpus": 1}], "tolerations": ["spot"]}
    )
    assert from_file.tolerations == (sdk.Toleration.exists("spot"),)
    with pytest.raises(ValueError, match="the effect must be one of"):
        spec_from_args(_args(tasks=1, toleration=["gpu-sku=inference:Sometimes"]))
    with pytest.raises(ValueError, match="tolerations must be a list of strings"):
        JobSpec.from_dict({"stages": [{"tasks": 1, "duration": 1}], "tolerations": "spot"})


# -- the scheduler, with a driver double --------------------------------------------------------


class FakeDriver:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.refuse: sdk.CallError | None = None  # set: every launch is refused with it

    async def launch(self, offers: list[sdk.Offer], tasks: list[sdk.TaskInfo]) -> None:
        if self.refuse is not None:
            raise self.refuse
        self.calls.append(("launch", (offers[0].agent_id, [t.task_id for t in tasks], tasks)))

    async def decline(self, offer_ids: list[str], refuse_seconds: float | None = None) -> None:
        self.calls.append(("decline", (sorted(offer_ids), refuse_seconds)))

    async def set_demands(self, demands: list[sdk.Demand]) -> None:
        self.calls.append(("demands", [(d.name, d.count, d.priority_class) for d in demands]))

    async def revive(self) -> None:
        self.calls.append(("revive", None))

    def of(self, kind: str) -> list[Any]:
        return [value for k, value in self.calls if k == kind]


def offer(agent: str, cpus: float, mem: float = 4096) -> sdk.Offer:
    return sdk.Offer(
        id=f"o-{agent}", agent_id=agent, resources=sdk.Resources(cpus=cpus, mem=mem, disk=100)
    )


def status(task_id: str, state: int, reason: int = 0) -> sdk.TaskStatus:
    return sdk.TaskStatus(task_id=task_id, state=state, reason=reason, uuid=b"u")


async def test_offers_are_binpacked_and_the_rest_declined_with_a_long_filter() -> None:
    batch = BatchScheduler(spec(Stage("s", 5, cpus=1, mem=64, duration=3)), run_id="")
    driver = FakeDriver()
    await batch.offers(driver, [offer("big", 8), offer("tiny", 0.5), offer("busy", 3)])  # type: ignore[arg-type]
    await batch.settle()
    launches = driver.of("launch")
    # The busiest agent that fits is filled first (3 tasks), then the next fullest.
    assert [(agent, len(ids)) for agent, ids, _ in launches] == [("busy", 3), ("big", 2)]
    task = launches[0][2][0]
    assert (task.priority_class, task.demand, task.simulation.duration_seconds) == ("batch", "s", 3)
    assert task.command.environment["CORRAL_TASK_INDEX"] == "0"
    assert driver.of("decline") == [(["o-tiny"], LONG_REFUSE_SECONDS)]
    assert driver.of("demands") == [[("s", 5, "batch")]]


async def test_a_preempted_task_is_retried_after_a_revive() -> None:
    batch = BatchScheduler(spec(Stage("s", 2, duration=1)), run_id="")
    driver = FakeDriver()
    await batch.offers(driver, [offer("a", 2), offer("b", 4)])  # type: ignore[arg-type]
    assert driver.of("decline") == [(["o-b"], LONG_REFUSE_SECONDS)]
    killed = sdk.TaskState.TASK_STATE_KILLED
    await batch.status(driver, status("s-0.0", killed, sdk.TaskReason.TASK_REASON_PREEMPTED))  # type: ignore[arg-type]
    assert driver.of("revive") == [None]  # b was refused for an hour: clear it
    assert batch.job.pending == 1
    await batch.offers(driver, [offer("b", 4)])  # type: ignore[arg-type]
    assert driver.of("launch")[-1][:2] == ("b", ["s-0.1"])
    finished = sdk.TaskState.TASK_STATE_FINISHED
    await batch.status(driver, status("s-1.0", finished))  # type: ignore[arg-type]
    await batch.status(driver, status("s-0.1", finished))  # type: ignore[arg-type]
    assert batch.finished.is_set()
    summary = batch.summary()
    assert (summary["succeeded"], summary["retries"], summary["disruptions"]) == (2, 1, 1)


async def test_a_job_being_taken_back_launches_nothing_more() -> None:
    # The job service sets ``closing`` before it kills the live tasks of a preempted job and
    # tears its framework down: an offer in between, revocable or not, is declined unused.
    batch = BatchScheduler(spec(Stage("s", 4, duration=1), revocable=True), run_id="")
    driver = FakeDriver()
    await batch.offers(driver, [offer("a", 1)])  # type: ignore[arg-type]
    assert len(driver.of("launch")) == 1
    batch.closing = True
    lendable = sdk.Offer(
        id="o-r", agent_id="r", resources=sdk.Resources(cpus=4, mem=4096), revocable=True
    )
    await batch.offers(driver, [offer("b", 4), lendable])  # type: ignore[arg-type]
    assert len(driver.of("launch")) == 1
    assert sorted(o for ids, _ in driver.of("decline") for o in ids) == ["o-b", "o-r"]
    assert batch.job.pending == 3  # still waiting: they go back to the queue with the job


async def test_a_task_the_master_never_knew_is_retried_without_spending_a_retry() -> None:
    # The service saved the attempt and stopped before the launch reached the master: asked
    # about it after a restart, the master answers LOST with reason RECONCILIATION.
    batch = BatchScheduler(spec(Stage("s", 1, duration=1), max_retries=0), run_id="")
    driver = FakeDriver()
    await batch.offers(driver, [offer("a", 1)])  # type: ignore[arg-type]
    [(_, [task_id], _)] = driver.of("launch")
    lost = sdk.TaskState.TASK_STATE_LOST
    unknown = sdk.TaskReason.TASK_REASON_RECONCILIATION
    await batch.status(driver, status(task_id, lost, unknown))  # type: ignore[arg-type]
    assert batch.job.pending == 1 and not batch.finished.is_set()  # back in the queue
    summary = batch.summary()
    assert (summary["retries"], summary["disruptions"]) == (1, 1)
    # The same state for the task's own reason (its agent lost) spends the only retry there is.
    other = BatchScheduler(spec(Stage("s", 1, duration=1), max_retries=0), run_id="")
    await other.offers(driver, [offer("a", 1)])  # type: ignore[arg-type]
    task_id = driver.of("launch")[-1][1][0]
    reason = sdk.TaskReason.TASK_REASON_AGENT_UNREACHABLE
    await other.status(driver, status(task_id, lost, reason))  # type: ignore[arg-type]
    assert other.finished.is_set() and other.summary()["failed"] == 1


async def test_an_offer_whose_launch_was_refused_is_given_back() -> None:
    # RESOURCE_EXHAUSTED (a master's admission bound) leaves the offer the framework's: held,
    # it would keep its resources from everyone until the offer timeout.
    batch = BatchScheduler(spec(Stage("s", 2, duration=1)), run_id="")
    driver = FakeDriver()
    driver.refuse = sdk.CallError(
        "Accept", grpc.StatusCode.RESOURCE_EXHAUSTED, "agent a has 256 tasks launching"
    )
    await batch.offers(driver, [offer("a", 2)])  # type: ignore[arg-type]
    assert driver.of("launch") == []
    assert driver.of("decline") == [(["o-a"], 0)]
    assert batch.job.pending == 2  # nothing ran: both wait for the next offer


@settings(max_examples=80, deadline=None)
@given(
    steps=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2)), max_size=60),
)
def test_a_job_restored_from_its_saved_records_is_the_same_job(
    steps: list[tuple[int, int]],
) -> None:
    """The job service saves each task's record (Job.saved) and a restarted service takes the
    job back from them (Job.restore): same stage, counts, live attempts and waiting tasks."""
    spec = JobSpec(
        "j",
        (Stage("a", 3, duration=1), Stage("b", 2, duration=1), Stage("c", 1, duration=1)),
        max_retries=1,
    )
    job = Job(spec, run="r1")
    for take, how in steps:
        if job.done:
            break
        job.take(take)
        if job.live and how < 3:
            task_id = sorted(job.live)[0]
            job.ended(task_id, succeeded=how == 0, disrupted=how == 2)
    saved = [job.saved(k, i) for k, s in enumerate(spec.stages) for i in range(s.tasks)]
    back = Job.restore(spec, "r1", saved)
    assert (back.stage, back.done, back.counts()) == (job.stage, job.done, job.counts())
    assert back.live == job.live and back.live_cpus == job.live_cpus
    assert sorted(back.queue) == sorted(job.queue)
    # A task that succeeded is never handed out again.
    succeeded = {(r.stage, r.index) for st_ in job.records for r in st_ if r.succeeded}
    while not back.done and back.queue:
        for a in back.take(10):
            assert (a.stage, a.index) not in succeeded
            back.ended(a.task_id, succeeded=True, disrupted=False)
