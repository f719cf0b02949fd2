"""The app's instances and what to do about them, without a master: how many to launch now
(scaling, rolling restarts within the upgrade strategy, the restart backoff), which to kill,
and the counts the status line shows. The scheduler feeds it events and does what it says."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

from corral.frameworks import sdk
from corral.frameworks.sdk.offers import EPSILON
from corral.frameworks.serving.app import AppSpec

State = Literal["staging", "running", "unreachable"]
# Why the framework killed an instance; an instance that ends for any other reason failed.
KillReason = Literal["", "scale-down", "upgrade", "unhealthy", "stop"]
EXPECTED_KILLS = ("scale-down", "upgrade", "stop")
DRAINED = ("scale-down", "upgrade")  # kills that wait out the app's drain_seconds
# Kills that are the instance's failure, counted at the verdict (the backoff, a deployment's
# failure_threshold), not when the kill is done.
FAILING_KILLS = ("unhealthy",)


@dataclass
class Instance:
    task_id: str
    version: str
    agent_id: str
    where: dict[str, str]  # the agent's attributes and hostname (sdk.where)
    ports: list[int]
    launched_at: float
    state: State = "staging"
    running_since: float | None = None
    healthy: bool | None = None  # None: not checked yet (or no check)
    healthy_since: float | None = None
    ready: bool | None = None  # None: no readiness check passed or failed yet
    why_unhealthy: str = ""  # the last failed health check's reason
    # Set when the framework decides to kill it: from then on it is out of the endpoints. The
    # kill goes to the master at ``kill_at`` (after the app's drain_seconds for an instance
    # that was ready) and is sent again until it went out (``kill_sent``; a restarted service
    # sends it again: a kill is idempotent).
    kill_reason: KillReason = ""
    kill_at: float = 0.0
    kill_sent: bool = False
    # It runs in a container (the app's container.docker): its COMMAND checks run inside it.
    in_container: bool = False

    @property
    def host(self) -> str:
        return self.where.get("hostname", "")

    @property
    def killing(self) -> bool:
        return bool(self.kill_reason)


@dataclass
class Counts:
    wanted: int
    running: int
    healthy: int
    pending: int
    staging: int
    old: int  # live instances of an earlier version (a rolling restart is under way)
    ready: int = 0  # healthy and passing the readiness check (if any): they get traffic
    current_ready: int = 0  # ... of them, of the current version


@dataclass(frozen=True)
class Endpoint:
    """A ready instance as a client reaches it."""

    task_id: str
    host: str
    ports: tuple[int, ...]
    version: str


@dataclass
class Instances:
    spec: AppSpec
    rng: random.Random = field(default_factory=random.Random)
    live: dict[str, Instance] = field(default_factory=dict)
    next_launch_at: float = 0.0  # the backoff: no launch before this
    failures: int = 0  # instances that ended on their own or unhealthy
    launched: int = 0
    unhealthy_kills: int = 0
    # A failed deployment (the serving service's): launch nothing and kill no old instance
    # until the app is changed, rolled back or restarted.
    held: bool = False
    _delays: Iterator[float] | None = None

    # -- what the app is --------------------------------------------------------------------

    def is_healthy(self, i: Instance) -> bool:
        if i.state != "running" or i.killing:
            return False
        return self.spec.health_check is None or i.healthy is True

    def is_ready(self, i: Instance) -> bool:
        """Healthy and, with a readiness check, passing it: receives traffic, and counts as up
        for the steps of a rolling restart."""
        if not self.is_healthy(i):
            return False
        return self.spec.readiness_check is None or i.ready is True

    def endpoints(self) -> list[Endpoint]:
        """The ready instances, by task id."""
        return [
            Endpoint(i.task_id, i.host, tuple(i.ports), i.version)
            for i in sorted(self.live.values(), key=lambda i: i.task_id)
            if self.is_ready(i)
        ]

    def _current(self) -> list[Instance]:
        v = self.spec.version
        return [i for i in self.live.values() if i.version == v and not i.killing]

    def _old(self) -> list[Instance]:
        v = self.spec.version
        return [i for i in self.live.values() if i.version != v and not i.killing]

    def counts(self, now: float) -> Counts:
        current = self._current()
        return Counts(
            wanted=self.spec.instances,
            running=sum(i.state == "running" for i in self.live.values() if not i.killing),
            healthy=sum(self.is_healthy(i) for i in self.live.values()),
            pending=self.missing(),
            staging=sum(i.state == "staging" for i in current),
            old=len(self._old()),
            ready=sum(self.is_ready(i) for i in self.live.values()),
            current_ready=sum(self.is_ready(i) for i in current),
        )

    def missing(self) -> int:
        """Instances of the current version still to launch, within the upgrade's surge
        (backoff aside)."""
        if self.held:
            return 0
        target = self.spec.instances
        current, old = self._current(), self._old()
        need = target - len(current)
        if old:
            cap = target + math.floor(self.spec.upgrade.maximum_over_capacity * target)
            need = min(need, cap - len(current) - len(old))
        return max(0, need)

    def to_launch(self, now: float) -> int:
        """How many to launch now: what is missing, unless the restart backoff holds it."""
        return 0 if now < self.next_launch_at else self.missing()

    def demand_count(self, now: float) -> int:
        """The demand's count as the master counts it: every live task names the demand, so
        this is the live ones plus those to launch now (unmet = to launch)."""
        return len(self.live) + self.to_launch(now)

    def mark_kill(self, i: Instance, reason: KillReason, now: float) -> float:
        """Decide to kill ``i``: out of the endpoints now, killed after the drain (for a
        scale-down or an upgrade of an instance that gets traffic); the drain's seconds."""
        drain = self.spec.drain_seconds if reason in DRAINED and self.is_ready(i) else 0.0
        i.kill_reason = reason
        i.kill_at = now + drain
        i.kill_sent = False
        if reason in FAILING_KILLS:
            # The verdict is the failure: the backoff starts now, so no replacement goes out
            # while the kill is still under way (it would have none).
            self._failed(i, now)
        return drain

    def due_kills(self, now: float) -> list[Instance]:
        """Instances marked for a kill whose kill is due and has not gone out yet."""
        return [
            i
            for i in sorted(self.live.values(), key=lambda i: i.task_id)
            if i.kill_reason and not i.kill_sent and i.kill_at <= now
        ]

    def to_kill(self, now: float) -> list[tuple[Instance, KillReason]]:
        """Instances to kill now: extras after a scale-down, and old versions as far as the
        upgrade strategy allows (the unhealthy first; a healthy one only while enough healthy
        instances stay)."""
        kills: list[tuple[Instance, KillReason]] = []
        target = self.spec.instances
        current = self._current()
        if len(current) > target:
            # The ones doing least first: not yet healthy, then the newest.
            order = sorted(current, key=lambda i: (self.is_healthy(i), -i.launched_at))
            kills += [(i, "scale-down") for i in order[: len(current) - target]]
        old = self._old()
        if old and not self.held:
            # Readiness, where the app has a readiness check, decides the steps (Marathon's
            # readinessChecks); otherwise it is the same as health.
            floor = math.ceil(self.spec.upgrade.minimum_health_capacity * target - EPSILON)
            up = sum(self.is_ready(i) for i in self.live.values() if not i.killing)
            up -= sum(self.is_ready(i) for i, _ in kills)
            for i in sorted(old, key=lambda i: (self.is_ready(i), i.launched_at)):
                if not self.is_ready(i):
                    kills.append((i, "upgrade"))
                elif up - 1 >= floor:
                    kills.append((i, "upgrade"))
                    up -= 1
        return kills

    # -- events -----------------------------------------------------------------------------

    def add(self, inst: Instance) -> None:
        self.live[inst.task_id] = inst
        self.launched += 1

    def adopt(self, inst: Instance) -> None:
        """An instance launched before (the serving service's store, after a restart)."""
        self.live[inst.task_id] = inst

    def running(self, task_id: str, now: float) -> Instance | None:
        i = self.live.get(task_id)
        if i is not None and i.state != "running":
            i.state = "running"
            i.running_since = now
        return i

    def unreachable(self, task_id: str) -> None:
        i = self.live.get(task_id)
        if i is not None:
            i.state = "unreachable"
            i.healthy = None
            i.ready = None

    def health(self, task_id: str, ok: bool, now: float) -> None:
        i = self.live.get(task_id)
        if i is None:
            return
        if ok and i.healthy is not True:
            i.healthy_since = now
        i.healthy = ok

    def readiness(self, task_id: str, ok: bool) -> None:
        i = self.live.get(task_id)
        if i is not None:
            i.ready = ok

    def ended(
        self, task_id: str, now: float, disrupted: bool = False
    ) -> tuple[Instance, bool] | None:
        """The instance ended; returns it and whether it failed (then the next launch waits
        out the backoff). ``disrupted``: the cluster ended it (preempted, evicted, drained:
        ``sdk.is_disruption``), which is no failure of the app's: replaced at once, not
        counted. None for a task that is not one of ours (a duplicate status)."""
        i = self.live.pop(task_id, None)
        if i is None:
            return None
        failed = i.kill_reason not in EXPECTED_KILLS and not (disrupted and not i.killing)
        if failed and i.kill_reason not in FAILING_KILLS:  # those were counted at the kill
            self._failed(i, now)
        return i, failed

    def _failed(self, i: Instance, now: float) -> None:
        """``i`` failed: counted, and the next launch waits out the backoff."""
        self.failures += 1
        if i.kill_reason == "unhealthy":
            self.unhealthy_kills += 1
        if self._delays is None:
            b = self.spec.backoff
            self._delays = sdk.Backoff(b.initial, b.max, b.factor).delays(self.rng)
        self.next_launch_at = max(self.next_launch_at, now + next(self._delays))

    def settle_backoff(self, now: float) -> None:
        """Forget the failures in a row once an instance of this version has stayed up (healthy,
        if checked) for ``backoff.reset_after`` seconds."""
        if self._delays is None:
            return
        after = self.spec.backoff.reset_after
        for i in self._current():
            since = i.healthy_since if self.spec.health_check is not None else i.running_since
            if self.is_healthy(i) and since is not None and now - since >= after:
                self._delays = None
                return
