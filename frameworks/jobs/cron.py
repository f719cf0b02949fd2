"""Periodic jobs: Kubernetes CronJob's rules (and Chronos'), pure; the time is an argument.

A ``Schedule`` is a cron expression in a time zone (croniter parses and steps it, in the zone:
daylight-saving gaps and repeats as croniter resolves them), with CronJob's
``concurrency_policy``, ``starting_deadline`` and history limits. ``decide`` is the
controller's step, run whenever the service looks (every few seconds, and at start):

1. The times to consider are those after the last one acted on (or the job's creation), and
   with a ``starting_deadline``, only within that many seconds of now; only the **most
   recent** missed time is started (one run, however many were missed while the service was
   down), and the history says how many were missed and between when; more than 100 missed
   is said as CronJob says it (``too many missed start times``).
2. ``Forbid`` with a run still active: not started now, and not forgotten — it starts when
   the active run ends, if still within the deadline (CronJob keeps the missed time).
   ``Replace``: the active runs are cancelled and the new one started. ``Allow``: started
   beside them.
3. A run's name is the job's name and the scheduled minute (``nightly-29481720``), as CronJob
   names its Jobs, so a restarted service never starts the same scheduled time twice.
4. ``prune`` keeps the newest ``successful_jobs_history_limit`` succeeded and
   ``failed_jobs_history_limit`` failed runs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

MAX_MISSED = 100  # CronJob's bound on missed start times it counts


class ConcurrencyPolicy(StrEnum):
    ALLOW = "Allow"
    FORBID = "Forbid"
    REPLACE = "Replace"


@dataclass(frozen=True)
class Schedule:
    cron: str
    time_zone: str = "UTC"
    concurrency_policy: ConcurrencyPolicy = ConcurrencyPolicy.ALLOW
    starting_deadline: float | None = None  # seconds
    successful_jobs_history_limit: int = 3
    failed_jobs_history_limit: int = 1
    suspend: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.cron, str) or not croniter.is_valid(self.cron):
            raise ValueError(f"schedule.cron: not a cron expression: {self.cron!r}")
        try:
            ZoneInfo(self.time_zone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"schedule.time_zone: unknown time zone {self.time_zone!r}") from None
        if self.starting_deadline is not None and not (
            isinstance(self.starting_deadline, int | float)
            and not isinstance(self.starting_deadline, bool)
            and 0 < self.starting_deadline < math.inf
        ):
            raise ValueError(
                f"schedule.starting_deadline: must be a number of seconds > 0, "
                f"got {self.starting_deadline!r}"
            )
        for name in ("successful_jobs_history_limit", "failed_jobs_history_limit"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"schedule.{name}: must be a whole number >= 0, got {value!r}")

    @classmethod
    def from_json(cls, data: Any) -> Schedule:
        if isinstance(data, str):
            return cls(data)
        if not isinstance(data, Mapping):
            raise ValueError("schedule: a cron expression, or an object with cron and more")
        known = {
            "cron",
            "time_zone",
            "concurrency_policy",
            "starting_deadline",
            "successful_jobs_history_limit",
            "failed_jobs_history_limit",
            "suspend",
        }
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(
                f"schedule: unknown field {unknown[0]!r} (fields: {', '.join(sorted(known))})"
            )
        if "cron" not in data:
            raise ValueError("schedule.cron: required")
        values = dict(data)
        policy = values.get("concurrency_policy", "Allow")
        try:
            values["concurrency_policy"] = ConcurrencyPolicy(policy)
        except ValueError:
            raise ValueError(
                f"schedule.concurrency_policy: must be Allow, Forbid or Replace, got {policy!r}"
            ) from None
        if not isinstance(values.get("suspend", False), bool):
            raise ValueError("schedule.suspend: must be true or false")
        return cls(**values)

    def to_json(self) -> dict[str, Any]:
        return {
            "cron": self.cron,
            "time_zone": self.time_zone,
            "concurrency_policy": self.concurrency_policy.value,
            "starting_deadline": self.starting_deadline,
            "successful_jobs_history_limit": self.successful_jobs_history_limit,
            "failed_jobs_history_limit": self.failed_jobs_history_limit,
            "suspend": self.suspend,
        }

    def times(self, after: float, until: float, limit: int) -> list[float]:
        """Scheduled times in (``after``, ``until``], oldest first: the first ``limit`` of
        them (enough to tell "more than ``MAX_MISSED``")."""
        zone = ZoneInfo(self.time_zone)
        it = croniter(self.cron, datetime.fromtimestamp(after, zone))
        out: list[float] = []
        while len(out) < limit:
            t = float(it.get_next(float))
            if t > until:
                break
            out.append(t)
        return out

    def next_after(self, t: float) -> float:
        zone = ZoneInfo(self.time_zone)
        return float(croniter(self.cron, datetime.fromtimestamp(t, zone)).get_next(float))


@dataclass(frozen=True)
class Decision:
    start: float | None  # the scheduled time to start a run for now (None: none)
    run_name: str  # its name ("" when none)
    cancel: tuple[str, ...]  # active runs to cancel first (Replace)
    notes: tuple[str, ...]  # what to say in the job's history
    last_schedule: float | None  # the time acted on, to keep (None: unchanged)
    next_at: float  # when to look again at the latest


def run_name(job: str, scheduled: float) -> str:
    """CronJob's naming: the scheduled time in minutes since the epoch."""
    return f"{job}-{int(scheduled // 60)}"


def when(t: float, zone: str) -> str:
    return datetime.fromtimestamp(t, ZoneInfo(zone)).strftime("%Y-%m-%d %H:%M %Z")


def decide(
    job: str,
    schedule: Schedule,
    created: float,
    last_schedule: float | None,
    now: float,
    active: Sequence[str],
    existing: frozenset[str] = frozenset(),
) -> Decision:
    """The controller's step for one periodic job. ``active``: its runs still going;
    ``existing``: names of runs it has already made (so none is made twice)."""
    next_at = schedule.next_after(now)
    if schedule.suspend:
        return Decision(None, "", (), (), None, next_at)
    earliest = last_schedule if last_schedule is not None else created
    if schedule.starting_deadline is not None:
        earliest = max(earliest, now - schedule.starting_deadline)
    notes: list[str] = []
    too_late: float | None = None  # the newest time dropped for the deadline
    if last_schedule is not None and schedule.starting_deadline is not None:
        skipped = schedule.times(last_schedule, now - schedule.starting_deadline, MAX_MISSED + 1)
        if skipped:
            too_late = _latest(schedule, skipped[-1], now - schedule.starting_deadline)
            notes.append(
                f"{len(skipped)}{'+' if len(skipped) > MAX_MISSED else ''} run"
                f"{'s' if len(skipped) != 1 else ''} not started: past the starting deadline "
                f"of {schedule.starting_deadline:g} s"
            )
    missed = schedule.times(earliest, now, MAX_MISSED + 1)
    if not missed:
        # Said once: the dropped times count as acted on.
        return Decision(None, "", (), tuple(notes), too_late, next_at)
    # The most recent missed time: count all of them only up to the bound.
    if len(missed) > MAX_MISSED:
        notes.append(
            f"too many missed start times (more than {MAX_MISSED}) since "
            f"{when(earliest, schedule.time_zone)}; starting the most recent"
        )
        latest = _latest(schedule, missed[-1], now)
    else:
        latest = missed[-1]
        if len(missed) > 1:
            notes.append(
                f"missed {len(missed) - 1} earlier run{'s' if len(missed) > 2 else ''} "
                f"({when(missed[0], schedule.time_zone)} to "
                f"{when(missed[-2], schedule.time_zone)}) while the service was not running; "
                "only the most recent is started, as CronJob does"
            )
    name = run_name(job, latest)
    if name in existing:
        return Decision(None, "", (), tuple(notes), latest, next_at)
    live = [a for a in active if a != name]
    if live and schedule.concurrency_policy is ConcurrencyPolicy.FORBID:
        notes.append(
            f"run of {when(latest, schedule.time_zone)} waits: {live[0]} is still running "
            "(concurrency_policy Forbid)"
        )
        # Not forgotten: looked at again when the active run ends (within the deadline).
        return Decision(None, "", (), tuple(notes), None, next_at)
    cancel: tuple[str, ...] = ()
    if live and schedule.concurrency_policy is ConcurrencyPolicy.REPLACE:
        cancel = tuple(live)
        notes.append(f"replacing {', '.join(live)} (concurrency_policy Replace)")
    notes.append(f"started {name} for {when(latest, schedule.time_zone)}")
    return Decision(latest, name, cancel, tuple(notes), latest, next_at)


def _latest(schedule: Schedule, start: float, now: float) -> float:
    """The most recent scheduled time at or before ``now``, stepping from ``start``."""
    latest = start
    while True:
        more = schedule.times(latest, now, 10_000)
        if not more:
            return latest
        latest = more[-1]


@dataclass(frozen=True)
class FinishedRun:
    name: str
    succeeded: bool
    ended_at: float


def prune(schedule: Schedule, finished: Sequence[FinishedRun]) -> list[str]:
    """Runs to forget: all but the newest ``successful_jobs_history_limit`` succeeded and
    ``failed_jobs_history_limit`` failed ones."""
    drop: list[str] = []
    for succeeded, keep in (
        (True, schedule.successful_jobs_history_limit),
        (False, schedule.failed_jobs_history_limit),
    ):
        runs = sorted(
            (r for r in finished if r.succeeded is succeeded),
            key=lambda r: (r.ended_at, r.name),
            reverse=True,
        )
        drop.extend(r.name for r in runs[keep:])
    return drop


def utc(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M:%S")
