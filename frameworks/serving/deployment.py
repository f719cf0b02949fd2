"""A deployment: getting an app's instances to its current revision (a new app, a change, a
scale, a restart or a rollback), and whether that is done, going on, or cannot finish.

Rules (Marathon's deployments, with Kubernetes' progress deadline):
1. Every revision starts a deployment; a new one supersedes the one running.
2. It **succeeds** once every live instance is of its version, ready (healthy, and passing the
   readiness check if the app has one), and there are exactly ``instances`` of them.
3. It **fails** when ``upgrade.failure_threshold`` instances of its version have failed (ended
   on their own, or their health check decided to kill them: counted at that verdict, so the
   failure that reaches the threshold holds the app before a replacement goes out), or when
   it has made no progress (more instances of its version ready, fewer old ones) for
   ``upgrade.progress_deadline`` seconds: an unhealthy version, or no room in the cluster (the
   reason then carries the master's why-pending); and at once when the master refuses the
   app's demand for good (a priority class or toleration it does not know, or the ACLs do not
   grant the app's principal).
4. A failed deployment holds the app: nothing more is launched and no old instance is killed,
   so what still runs keeps serving, until the app is changed, rolled back or restarted.

Pure: the service feeds it counts and failures with the time, and stores the record.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from corral.frameworks.serving.app import AppSpec
from corral.frameworks.serving.instances import Instances
from corral.frameworks.serving.store import DeploymentRecord


@dataclass
class Deployment:
    record: DeploymentRecord
    last_progress_at: float  # monotonic
    best: tuple[int, int] = (0, 0)  # (ready of its version, -old live): progress is a raise
    last_failure: str = ""
    stuck_why: list[str] = field(default_factory=list)  # the master's why-pending, when asked

    @classmethod
    def start(cls, app_id: str, revision: int, version: str, wall: float, now: float) -> Deployment:
        return cls(
            DeploymentRecord(app_id, revision, version, "running", "", 0, wall),
            last_progress_at=now,
        )

    @classmethod
    def resume(cls, record: DeploymentRecord, now: float) -> Deployment:
        """After a restart of the service: the deadline counts from now (the service's own
        downtime is not the deployment's)."""
        return cls(record, last_progress_at=now)

    @property
    def running(self) -> bool:
        return self.record.state == "running"

    def failed_instance(self, version: str, why: str) -> None:
        if self.running and version == self.record.version:
            self.record.failures += 1
            self.last_failure = why

    def assess(self, app: Instances, now: float, wall: float) -> bool:
        """Move the deployment on from ``app``'s instances; True if its record changed."""
        if not self.running:
            return False
        spec = app.spec
        if rolled_out(app):
            self._end("succeeded", "", wall)
            return True
        counts = app.counts(now)
        mark = (counts.current_ready, -counts.old)
        if mark > self.best:
            self.best = mark
            self.last_progress_at = now
        threshold = spec.upgrade.failure_threshold
        if threshold and self.record.failures >= threshold:
            last = f" (last: {self.last_failure})" if self.last_failure else ""
            self._end(
                "failed",
                f"{self.record.failures} instances of version {self.record.version} failed"
                f"{last}; held: roll back, or apply a fixed app",
                wall,
            )
            return True
        if now - self.last_progress_at >= spec.upgrade.progress_deadline:
            self._end("failed", self._stuck_reason(spec, counts.pending), wall)
            return True
        return False

    def stuck(self, now: float, spec: AppSpec) -> bool:
        """Past half the deadline with nothing gained: worth asking the master why."""
        return self.running and now - self.last_progress_at >= spec.upgrade.progress_deadline / 2

    def refused(self, why: str, wall: float) -> bool:
        """The master refused the app's demand for good (rule 3); True if the record changed."""
        if not self.running:
            return False
        self._end(
            "failed", f"the master refused the app's demand: {why}; held: apply a fixed app", wall
        )
        return True

    def supersede(self, wall: float) -> None:
        if self.running:
            self._end("superseded", "a newer revision was applied", wall)

    def _stuck_reason(self, spec: AppSpec, pending: int) -> str:
        text = f"no progress for {spec.upgrade.progress_deadline:g} s"
        if pending:
            text += f": {pending} instances cannot be placed"
            if self.stuck_why:
                text += f" ({'; '.join(self.stuck_why)})"
        else:
            text += ": instances of the new version do not become ready"
        return text + "; held: roll back, or apply a fixed app"

    def _end(self, state: str, reason: str, wall: float) -> None:
        assert state in ("succeeded", "failed", "superseded")
        self.record.state = state  # type: ignore[assignment]
        self.record.reason = reason
        self.record.ended_at = wall


def rolled_out(app: Instances) -> bool:
    """Every live instance is of the current version, not being killed and ready, and there
    are exactly as many as wanted."""
    version = app.spec.version
    live = list(app.live.values())
    return len(live) == app.spec.instances and all(
        i.version == version and not i.killing and app.is_ready(i) for i in live
    )
