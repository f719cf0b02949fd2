"""The batch job model: stages of many short tasks, retries, and the binpack choice.

Pure bookkeeping, no SDK calls and no IO (the SDK's placement values only), so it is tested
without a master: the scheduler asks it what to launch next and tells it what became of each task.

- A job is stages; stage k starts when every task of stage k-1 has ended for good. If a task of
  a stage ends for good without succeeding, the later stages are skipped (their tasks would
  read output that is not there) and the job ends.
- A task that fails (FAILED, LOST, ERROR, KILLED by an operator, ...) is tried again, up to
  ``max_retries`` failures in all. One the cluster took away (``disrupted``: preempted, evicted,
  drained, ``sdk.is_disruption``) is tried again without spending a retry. A launch the master
  refused is not an attempt.
- ``max_cpus`` (like ``spark.cores.max``) bounds the cpus of the job's live tasks.
"""

from __future__ import annotations

import enum
import json
import math
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corral.frameworks.placement_args import docker_agents
from corral.frameworks.run_ids import with_run
from corral.frameworks.sdk.offers import EPSILON
from corral.frameworks.sdk.placement import Constraint, Toleration


@dataclass(frozen=True)
class Stage:
    """``tasks`` copies of one command and shape. ``duration`` (seconds) is what a task lasts
    on an agent started with ``--simulate``; without a command, the task runs ``sleep``."""

    name: str
    tasks: int
    cpus: float = 1.0
    mem: float = 128.0
    disk: float = 0.0
    gpus: float = 0.0
    command: str = ""
    duration: float | None = None

    def __post_init__(self) -> None:
        what = f"stage {self.name!r}"
        if not self.name:
            raise ValueError("a stage needs a name")
        if isinstance(self.tasks, bool) or not isinstance(self.tasks, int) or self.tasks < 1:
            raise ValueError(f"{what}: tasks must be a whole number >= 1, got {self.tasks!r}")
        for name in ("cpus", "mem", "disk", "gpus"):
            _quantity(f"{what}: {name}", getattr(self, name))
        if self.cpus <= 0 and self.mem <= 0:
            raise ValueError(f"{what}: a task needs cpus or mem")
        if self.duration is not None:
            _quantity(f"{what}: duration", self.duration)
        if not self.command.strip() and self.duration is None:
            raise ValueError(f"{what}: give a command or a duration")

    @property
    def shell_command(self) -> str:
        return self.command if self.command.strip() else f"sleep {self.duration:g}"


@dataclass(frozen=True)
class JobSpec:
    name: str
    stages: tuple[Stage, ...]
    max_retries: int = 3
    priority_class: str = "batch"
    max_cpus: float | None = None
    # Also run on revocable resources (docs/scheduling.md): the framework subscribes with the
    # REVOCABLE_RESOURCES capability and fills revocable offers too; a task whose resources
    # are taken back is retried like a preempted one.
    revocable: bool = False
    # Where its tasks may go: taints they tolerate (a GPU pool's), attributes an agent must
    # have (``gpu-sku=inference``). The framework's and its demands' (framework_info.py).
    tolerations: tuple[Toleration, ...] = ()
    constraints: tuple[Constraint, ...] = ()
    # The Docker image its tasks run in ("": processes on the agents); the job then places
    # only on agents that run images (placement_args.docker_agents, added here).
    image: str = ""

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("a job needs a name")
        if self.image:
            if not isinstance(self.image, str) or any(ch.isspace() for ch in self.image):
                raise ValueError(f"image must name an image, got {self.image!r}")
            docker = docker_agents()
            if docker not in self.constraints:
                object.__setattr__(self, "constraints", (*self.constraints, docker))
        if not self.stages:
            raise ValueError(f"job {self.name!r} has no stages")
        names = [s.name for s in self.stages]
        if len(set(names)) != len(names):
            raise ValueError(f"job {self.name!r}: stage names must be unique, got {names}")
        if isinstance(self.max_retries, bool) or not isinstance(self.max_retries, int):
            raise ValueError(f"max_retries must be a whole number, got {self.max_retries!r}")
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries}")
        if self.max_cpus is not None:
            _quantity("max_cpus", self.max_cpus)
            for s in self.stages:
                if s.cpus > self.max_cpus + EPSILON:
                    raise ValueError(
                        f"stage {s.name!r}: a task's {s.cpus:g} cpus exceed max_cpus "
                        f"{self.max_cpus:g}; it could never run"
                    )

    def at_once(self, stage: Stage) -> int:
        """The most tasks of ``stage`` live at once: its tasks, within ``max_cpus`` (at least
        one: a task of more than ``max_cpus`` is refused above)."""
        n = stage.tasks
        if self.max_cpus is not None and stage.cpus > 0:
            n = min(n, max(1, int(self.max_cpus / stage.cpus + EPSILON)))
        return n

    @property
    def total_tasks(self) -> int:
        return sum(s.tasks for s in self.stages)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], **overrides: Any) -> JobSpec:
        """A job from its JSON form (docs/frameworks.md); ``overrides`` that are not None
        replace the file's values (the command line wins)."""
        if not isinstance(data, Mapping):
            raise ValueError("a job is a JSON object")
        known = {
            "name",
            "stages",
            "max_retries",
            "priority_class",
            "max_cpus",
            "revocable",
            "tolerations",
            "constraints",
            "image",
        }
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown job keys: {sorted(unknown)}")
        stages_data = data.get("stages")
        if not isinstance(stages_data, list):
            raise ValueError("a job needs a list of stages")
        stages = []
        fields = {"name", "tasks", "cpus", "mem", "disk", "gpus", "command", "duration"}
        for i, raw in enumerate(stages_data):
            if not isinstance(raw, Mapping):
                raise ValueError(f"stage {i} is not a JSON object")
            bad = set(raw) - fields
            if bad:
                raise ValueError(f"stage {i}: unknown keys {sorted(bad)}")
            try:
                stages.append(Stage(**{"name": f"stage{i}", **raw}))
            except TypeError as err:
                raise ValueError(f"stage {i}: {err}") from None
        values = {k: v for k, v in data.items() if k != "stages"}
        values.setdefault("name", "batch")
        values["tolerations"] = _parsed(data.get("tolerations", []), "tolerations", Toleration)
        values["constraints"] = _parsed(data.get("constraints", []), "constraints", Constraint)
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(stages=tuple(stages), **values)

    @classmethod
    def load(cls, path: str | Path, **overrides: Any) -> JobSpec:
        try:
            data = json.loads(Path(path).read_text())
        except OSError as err:
            raise ValueError(f"cannot read the job file {path}: {err.strerror}") from None
        except json.JSONDecodeError as err:
            raise ValueError(f"{path} is not JSON: {err}") from None
        try:
            return cls.from_dict(data, **overrides)
        except ValueError as err:
            raise ValueError(f"{path}: {err}") from None


def _parsed(value: object, name: str, kind: Any) -> tuple[Any, ...]:
    """A job file's list of tolerations or constraints, each in its string form
    (``gpu-sku=inference:NoSchedule``, ``zone=a``: ``sdk.Toleration.parse``,
    ``sdk.Constraint.parse``)."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{name} must be a list of strings, got {value!r}")
    return tuple(kind.parse(v) for v in value)


def _quantity(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be a number, got {value!r}")
    if math.isnan(value) or math.isinf(value) or value < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")


class Outcome(enum.Enum):
    """What ending a task attempt did."""

    SUCCEEDED = "succeeded"
    RETRY = "retry"  # back in the queue
    GAVE_UP = "gave up"  # ended for good without succeeding
    IGNORED = "ignored"  # not a live attempt (a duplicate status, an old attempt)


@dataclass
class TaskRecord:
    stage: int
    index: int
    attempts: int = 0  # launched attempts
    retries: int = 0  # relaunches, after a failure or a disruption
    disruptions: int = 0  # ends that were the cluster's doing: no retry spent
    failures: int = 0  # ends that were the task's: each spends a retry
    succeeded: bool = False
    gave_up: bool = False
    skipped: bool = False
    last_error: str = ""

    @property
    def ended(self) -> bool:
        return self.succeeded or self.gave_up or self.skipped


@dataclass(frozen=True)
class Attempt:
    """A task to launch: which task of which stage, and its attempt number (0 first)."""

    task_id: str
    stage: int
    index: int
    attempt: int


@dataclass
class Job:
    """A running job's state. The scheduler takes ``Attempt``s with ``take``, reports the ones
    the master refused with ``unlaunch`` and the end of each with ``ended``."""

    spec: JobSpec
    run: str = ""  # ends every task id (run_ids.py)
    stage: int = 0
    records: list[list[TaskRecord]] = field(default_factory=list)
    queue: deque[int] = field(default_factory=deque)  # indexes of the current stage to launch
    live: dict[str, Attempt] = field(default_factory=dict)  # task id -> attempt
    live_cpus: float = 0.0

    def __post_init__(self) -> None:
        self.records = [
            [TaskRecord(k, i) for i in range(s.tasks)] for k, s in enumerate(self.spec.stages)
        ]
        self.queue = deque(range(self.spec.stages[0].tasks))

    # -- what the scheduler asks ------------------------------------------------------------

    @property
    def current(self) -> Stage:
        return self.spec.stages[self.stage]

    @property
    def done(self) -> bool:
        return self.stage >= len(self.spec.stages)

    @property
    def pending(self) -> int:
        """Tasks of the current stage waiting to be launched."""
        return len(self.queue)

    @property
    def wanted(self) -> int:
        """Tasks the job could use now: live ones plus those waiting, within ``max_cpus``.
        The demand the scheduler tells the master (0: it needs nothing)."""
        if self.done:
            return 0
        return min(len(self.live) + len(self.queue), self.spec.at_once(self.current))

    def room_for(self) -> int:
        """How many more tasks of the current stage ``max_cpus`` allows now."""
        if self.done:
            return 0
        cap = self.spec.max_cpus
        cpus = self.current.cpus
        if cap is None or cpus <= 0:
            return len(self.queue)
        return max(0, min(len(self.queue), int((cap - self.live_cpus) / cpus + EPSILON)))

    def take(self, n: int) -> list[Attempt]:
        """Up to ``n`` attempts to launch now (fewer if ``max_cpus`` or the queue say so);
        they count as live from here on."""
        n = min(n, self.room_for())
        out = []
        for _ in range(n):
            index = self.queue.popleft()
            rec = self.records[self.stage][index]
            task_id = with_run(f"{self.current.name}-{index}.{rec.attempts}", self.run)
            attempt = Attempt(task_id, self.stage, index, rec.attempts)
            rec.attempts += 1
            self.live[attempt.task_id] = attempt
            self.live_cpus += self.current.cpus
            out.append(attempt)
        return out

    def unlaunch(self, attempts: Iterable[Attempt]) -> None:
        """The master refused these launches: nothing ran, they go back to the front."""
        for a in reversed(list(attempts)):
            if self.live.pop(a.task_id, None) is None:
                continue
            self.live_cpus -= self.spec.stages[a.stage].cpus
            self.records[a.stage][a.index].attempts -= 1
            self.queue.appendleft(a.index)

    def ended(self, task_id: str, succeeded: bool, disrupted: bool, error: str = "") -> Outcome:
        """Attempt ``task_id`` ended (a terminal status); ``disrupted``: by the cluster, not by
        itself (``sdk.is_disruption``), so it is tried again whatever ``max_retries`` says.
        Moves to the next stage when the current one is over."""
        attempt = self.live.pop(task_id, None)
        if attempt is None:
            return Outcome.IGNORED
        stage = self.spec.stages[attempt.stage]
        self.live_cpus = max(0.0, self.live_cpus - stage.cpus)
        rec = self.records[attempt.stage][attempt.index]
        if succeeded:
            rec.succeeded = True
            outcome = Outcome.SUCCEEDED
        else:
            rec.last_error = error
            if disrupted:
                rec.disruptions += 1
            else:
                rec.failures += 1
            if disrupted or rec.failures <= self.spec.max_retries:
                rec.retries += 1
                self.queue.append(attempt.index)
                outcome = Outcome.RETRY
            else:
                rec.gave_up = True
                outcome = Outcome.GAVE_UP
        self._advance()
        return outcome

    def _advance(self) -> None:
        while not self.done and not self.queue and not self.live:
            failed = any(r.gave_up for r in self.records[self.stage])
            self.stage += 1
            if self.done:
                return
            if failed:
                for later in self.records[self.stage :]:
                    for r in later:
                        r.skipped = True
                self.stage = len(self.spec.stages)
                return
            self.queue = deque(range(self.current.tasks))

    # -- kept and taken back (the job service's store) -------------------------------------

    def saved(self, stage: int, index: int) -> dict[str, Any]:
        """One task's record as JSON, with its live attempt's id (``live``, "" if none):
        what a restarted job service needs to take the job back (``restore``)."""
        rec = self.records[stage][index]
        live = next((t for t, a in self.live.items() if a.stage == stage and a.index == index), "")
        return {
            "stage": stage,
            "index": index,
            "attempts": rec.attempts,
            "retries": rec.retries,
            "disruptions": rec.disruptions,
            "failures": rec.failures,
            "succeeded": rec.succeeded,
            "gave_up": rec.gave_up,
            "last_error": rec.last_error,
            "live": live,
        }

    @classmethod
    def restore(cls, spec: JobSpec, run: str, saved: Iterable[Mapping[str, Any]]) -> Job:
        """The job as its saved task records left it: finished tasks stay finished (none runs
        twice), live attempts are live again (the caller asks the master about them), the rest
        wait in their stage's queue. Tasks with no record have not started."""
        job = cls(spec, run=run)
        for s in saved:
            rec = job.records[s["stage"]][s["index"]]
            rec.attempts, rec.retries = s["attempts"], s["retries"]
            rec.disruptions, rec.failures = s["disruptions"], s["failures"]
            rec.succeeded, rec.gave_up = s["succeeded"], s["gave_up"]
            rec.last_error = s["last_error"]
            if s["live"]:
                job.live[s["live"]] = Attempt(s["live"], s["stage"], s["index"], rec.attempts - 1)
                job.live_cpus += spec.stages[s["stage"]].cpus
        job.stage = 0
        job.queue = deque()
        for k, records in enumerate(job.records):
            if not all(r.ended for r in records):
                job.stage = k
                break
        else:
            job.stage = len(spec.stages)
        if not job.done:
            if any(r.gave_up for stage in job.records[: job.stage] for r in stage):
                for later in job.records[job.stage :]:
                    for r in later:
                        r.skipped = True
                job.stage = len(spec.stages)
                return job
            busy = {a.index for a in job.live.values() if a.stage == job.stage}
            job.queue = deque(
                r.index for r in job.records[job.stage] if not r.ended and r.index not in busy
            )
            job._advance()
        return job

    def disrupted_all(self) -> list[tuple[int, int]]:
        """Every live attempt ended by the cluster (the job service preempted or suspended the
        job and tore its framework down): back in the queue, no retry spent. The (stage,
        index) of each, for the store."""
        touched = []
        for task_id in list(self.live):
            a = self.live[task_id]
            self.ended(task_id, succeeded=False, disrupted=True, error="preempted by its queue")
            touched.append((a.stage, a.index))
        return touched

    # -- the summary ------------------------------------------------------------------------

    def counts(self) -> dict[str, int]:
        every = [r for stage in self.records for r in stage]
        return {
            "tasks": len(every),
            "succeeded": sum(r.succeeded for r in every),
            "failed": sum(r.gave_up for r in every),
            "skipped": sum(r.skipped for r in every),
            "retries": sum(r.retries for r in every),
            "disruptions": sum(r.disruptions for r in every),
            "failures": sum(r.failures for r in every),
            "attempts": sum(r.attempts for r in every),
        }

    def ended_tasks(self) -> int:
        return sum(r.ended for stage in self.records for r in stage)


# -- binpack --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Room:
    """What an offer has free (the part of it binpack looks at)."""

    cpus: float
    mem: float
    disk: float = 0.0
    gpus: float = 0.0


def fit_count(room: Room, stage: Stage) -> int:
    """How many tasks of ``stage`` fit in ``room``."""
    counts = []
    for name in ("cpus", "mem", "disk", "gpus"):
        want = getattr(stage, name)
        if want > 0:
            counts.append(int(getattr(room, name) / want + EPSILON))
    return min(counts) if counts else 0


def binpack_order(rooms: Sequence[Room], stage: Stage) -> list[int]:
    """Indexes of the rooms a task of ``stage`` fits in, fullest first: the room with the
    fewest tasks' worth free comes first (then the least cpus, then the least mem), so the job
    fills agents that are already busy and leaves empty ones whole for others. Rooms where not
    one task fits are left out."""
    fitting = [(fit_count(r, stage), r.cpus, r.mem, i) for i, r in enumerate(rooms)]
    return [i for n, _c, _m, i in sorted(f for f in fitting if f[0] > 0)]


def plan(rooms: Sequence[Room], stage: Stage, n: int) -> list[int]:
    """How many of ``n`` tasks go on each room, binpacked: the fullest fitting room is filled
    first, then the next. Returns a count per room (zeros for rooms it leaves alone)."""
    counts = [0] * len(rooms)
    left = n
    for i in binpack_order(rooms, stage):
        if left <= 0:
            break
        take = min(left, fit_count(rooms[i], stage))
        counts[i] = take
        left -= take
    return counts
