"""The serving service: many apps, each kept running by an ``AppRunner``, changed through
``put``/``scale``/``restart``/``rollback``/``delete`` and read back as plain dicts (what the
HTTP API answers, api.py). Every change is a new revision in the store before it runs.

Bad input raises ``AppError`` (HTTP 400, the message names the field) and changes nothing; an
unknown app raises ``UnknownApp`` (404).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from corral.frameworks.service.tenancy import NOBODY, Owner, Tenancy
from corral.frameworks.serving.app import AppError, AppSpec
from corral.frameworks.serving.app_runner import AppRunner, running_spec
from corral.frameworks.serving.dns_names import AppView, is_label
from corral.frameworks.serving.instances import Endpoint
from corral.frameworks.serving.store import Revision, Store

DEFAULT_FAILOVER_TIMEOUT = 7 * 24 * 3600.0  # a week, as Marathon's
DELETE_WAIT_SECONDS = 10.0


class UnknownApp(LookupError):
    def __init__(self, app_id: str) -> None:
        super().__init__(f"no app {app_id!r}")


class Service:
    def __init__(
        self,
        store: Store,
        master: str,
        failover_timeout: float = DEFAULT_FAILOVER_TIMEOUT,
        tenancy: Tenancy | None = None,
    ) -> None:
        self.store = store
        self.master = master
        self.failover_timeout = failover_timeout
        # Who may do what to which app, and what an app may ask for: the master's to decide
        # (tenancy.py); the HTTP API asks before it calls a change here.
        self.tenancy = tenancy or Tenancy(None)
        self.runners: dict[str, AppRunner] = {}
        self.started_at = time.time()

    async def start(self) -> None:
        """Take back every app in the store, with its instances, as they were left."""
        for rec in self.store.apps():
            revision = self.store.revision(rec.id, rec.revision)
            if revision is None:  # cannot happen: written in one transaction with the app
                continue
            runner = self._runner(revision, rec.framework_id, rec.owner)
            runner.start(self.store.instances(rec.id))
            if rec.deleting:
                runner.delete()

    async def close(self) -> None:
        """Stop every app's driver; the instances keep running (the failover timeout)."""
        await asyncio.gather(*(r.stop() for r in self.runners.values()))

    def _runner(self, revision: Revision, framework_id: str, owner: Owner) -> AppRunner:
        runner = AppRunner(
            self.store, revision, framework_id, self.master, self.failover_timeout, owner
        )
        self.runners[revision.app_id] = runner
        return runner

    def _get(self, app_id: str) -> AppRunner:
        runner = self.runners.get(app_id)
        if runner is None or runner.deleted.is_set():
            raise UnknownApp(app_id)
        return runner

    # -- changes ----------------------------------------------------------------------------

    def spec(self, app_id: str) -> AppSpec:
        """The app as it runs now (its JSON's fields; UnknownApp)."""
        return AppSpec.from_json(self._get(app_id).revision.spec)

    def owner(self, app_id: str) -> Owner | None:
        """Who owns the app (None: there is no such app)."""
        runner = self.runners.get(app_id)
        if runner is None or runner.deleted.is_set():
            return None
        return runner.owner

    def framework_id(self, app_id: str) -> str:
        runner = self.runners.get(app_id)
        return runner.framework_id if runner is not None else ""

    @staticmethod
    def parse(app_id: str, body: object) -> AppSpec:
        """The app ``body`` describes, for the path's ``app_id`` (AppError if it cannot be)."""
        if isinstance(body, dict) and "id" not in body:
            body = {**body, "id": app_id}
        spec = AppSpec.from_json(body)
        if spec.id != app_id:
            raise AppError(f"id: the body's id {spec.id!r} is not the path's {app_id!r}")
        return spec

    def put(self, app_id: str, body: object, owner: Owner = NOBODY) -> tuple[bool, dict[str, Any]]:
        """Create (owned by ``owner``) or change an app; (created, the answer)."""
        spec = self.parse(app_id, body)
        runner = self.runners.get(app_id)
        if runner is not None and runner.deleted.is_set():
            del self.runners[app_id]
            runner = None
        if runner is not None:
            if runner.deleting:
                raise AppError(f"app {app_id!r} is being deleted; apply it again once it is gone")
            if spec.role != runner.spec.role:
                raise AppError(
                    f"role: an app cannot change its role ({runner.spec.role!r} -> "
                    f"{spec.role!r}); delete it and create it again"
                )
            if spec == AppSpec.from_json(runner.revision.spec):
                return False, self._changed(runner, "no change")
            rev = self.store.add_revision(app_id, spec.to_json(), runner.revision.restarts, "apply")
            return False, self._changed(runner, runner.apply(rev))
        rev = self.store.add_revision(app_id, spec.to_json(), 0, "create", owner)
        runner = self._runner(rev, "", owner)
        runner.start([])
        return True, self._changed(runner, "created")

    def scale(self, app_id: str, instances: object) -> dict[str, Any]:
        runner = self._get(app_id)
        if isinstance(instances, bool) or not isinstance(instances, int) or instances < 0:
            raise AppError(f"instances: must be a whole number >= 0, got {instances!r}")
        spec = {**runner.revision.spec, "instances": instances}
        change = f"scale {runner.spec.instances} -> {instances}"
        rev = self.store.add_revision(app_id, spec, runner.revision.restarts, change)
        return self._changed(runner, runner.apply(rev))

    def restart(self, app_id: str) -> dict[str, Any]:
        """Replace every instance by a rolling restart of the same app."""
        runner = self._get(app_id)
        restarts = runner.revision.restarts + 1
        rev = self.store.add_revision(app_id, runner.revision.spec, restarts, "restart")
        return self._changed(runner, runner.apply(rev))

    def rollback(self, app_id: str, to: object = None) -> dict[str, Any]:
        """A new revision with the app of an earlier one (default: the one before the
        current), keeping today's instance count, as ``kubectl rollout undo`` does."""
        runner = self._get(app_id)
        target = self._rollback_target(runner, to)
        spec = {**target.spec, "instances": runner.spec.instances}
        change = f"rollback to {target.revision}"
        rev = self.store.add_revision(app_id, spec, target.restarts, change)
        return self._changed(runner, runner.apply(rev))

    def rollback_spec(self, app_id: str, to: object = None) -> AppSpec:
        """The app a rollback would run (AppError if there is no such revision)."""
        runner = self._get(app_id)
        target = self._rollback_target(runner, to)
        return AppSpec.from_json({**target.spec, "instances": runner.spec.instances})

    def _rollback_target(self, runner: AppRunner, to: object) -> Revision:
        app_id = runner.app_id
        current = runner.revision.revision
        if to is None:
            earlier = [r for r in self.store.revisions(app_id) if r.revision < current]
            if not earlier:
                raise AppError(f"app {app_id!r} has no revision before {current} to roll back to")
            target = earlier[-1]
        else:
            if isinstance(to, bool) or not isinstance(to, int) or to < 1:
                raise AppError(f"revision: must be a whole number >= 1, got {to!r}")
            found = self.store.revision(app_id, to)
            if found is None:
                raise AppError(f"revision: app {app_id!r} has no revision {to}")
            target = found
        return target

    async def delete(self, app_id: str) -> bool:
        """Kill the app's instances and forget it; False if the master did not answer within
        ``DELETE_WAIT_SECONDS`` (the deletion goes on, and ends when it answers)."""
        runner = self._get(app_id)
        runner.delete()
        try:
            await asyncio.wait_for(runner.deleted.wait(), DELETE_WAIT_SECONDS)
        except TimeoutError:
            return False
        await runner.stop()
        self.runners.pop(app_id, None)
        return True

    def _changed(self, runner: AppRunner, what: str) -> dict[str, Any]:
        return {
            "app": runner.app_id,
            "revision": runner.revision.revision,
            "version": runner.spec.version,
            "change": what,
            "deployment": _deployment(runner),
        }

    # -- reading ----------------------------------------------------------------------------

    def apps(self) -> list[dict[str, Any]]:
        return [self._summary(r) for _, r in sorted(self.runners.items()) if not r.deleted.is_set()]

    def get(self, app_id: str) -> dict[str, Any]:
        runner = self._get(app_id)
        out = self._summary(runner)
        out["app"] = runner.revision.spec
        out["instances"] = [
            {
                "task_id": i.task_id,
                "host": i.host,
                "ports": i.ports,
                "version": i.version,
                "state": i.state,
                "healthy": i.healthy,
                "ready": runner.scheduler.app.is_ready(i),
                "killing": i.kill_reason or None,
            }
            for i in sorted(runner.scheduler.app.live.values(), key=lambda i: i.task_id)
        ]
        return out

    def _summary(self, runner: AppRunner) -> dict[str, Any]:
        c = runner.scheduler.counts()
        return {
            "id": runner.app_id,
            "owner": runner.owner.name,
            "revision": runner.revision.revision,
            "version": runner.spec.version,
            "framework_id": runner.framework_id,
            "connected": runner.driver is not None and runner.driver.subscribed,
            "deleting": runner.deleting,
            "wanted": c.wanted,
            "running": c.running,
            "healthy": c.healthy,
            "ready": c.ready,
            "pending": c.pending,
            "deployment": _deployment(runner),
        }

    def history(self, app_id: str) -> list[dict[str, Any]]:
        self._get(app_id)
        return [
            {
                "revision": r.revision,
                "version": running_spec(r).version,
                "instances": r.spec.get("instances"),
                "change": r.change,
                "created_at": r.created_at,
                "app": r.spec,
            }
            for r in self.store.revisions(app_id)
        ]

    async def status(self, app_id: str) -> dict[str, Any]:
        """The deployment's progress, with the master's why-pending while instances wait."""
        runner = self._get(app_id)
        c = runner.scheduler.counts()
        out = _deployment(runner)
        out.update(
            app=app_id,
            wanted=c.wanted,
            ready=c.ready,
            updated=c.current_ready,
            old=c.old,
            pending=c.pending,
            held=runner.scheduler.app.held,
            last_event=runner.last_event,
        )
        out["why_pending"] = [p.summary for p in await runner.why_pending()] if c.pending else []
        return out

    def endpoints(self, app_id: str) -> tuple[list[Endpoint], asyncio.Event]:
        """The ready instances and an event set when they change next."""
        runner = self._get(app_id)
        return runner.endpoints, runner.endpoints_changed

    def dns_view(self, label: str) -> AppView | None:
        """The app DNS names ``label`` (its id, case-insensitive; an id that is not a DNS
        label is not served), with its ready instances as they are now (dns.py)."""
        runner = self.runners.get(label)
        if runner is None or not is_label(runner.app_id):
            runner = next(
                (r for i, r in self.runners.items() if i.lower() == label and is_label(i)), None
            )
        if runner is None or runner.deleted.is_set():
            return None
        return AppView(runner.spec.port_names, runner.endpoints)

    def is_deleted(self, app_id: str) -> bool:
        runner = self.runners.get(app_id)
        return runner is None or runner.deleted.is_set()


def _deployment(runner: AppRunner) -> dict[str, Any]:
    d = runner.deployment.record
    return {
        "revision": d.revision,
        "version": d.version,
        "state": d.state,
        "reason": d.reason,
        "failures": d.failures,
        "started_at": d.started_at,
        "ended_at": d.ended_at,
    }


def endpoint_json(e: Endpoint) -> dict[str, Any]:
    return {"task_id": e.task_id, "host": e.host, "ports": list(e.ports), "version": e.version}
