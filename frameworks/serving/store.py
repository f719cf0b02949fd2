"""The serving service's app store, as records (``corral.frameworks.service.records``): in a
SQLite file (``serving.db`` in ``--state DIR``) by default, or in ZooKeeper (``--zk``).

What a restarted service needs to take over without touching a running instance:

- ``apps`` (key: the app id): each app's framework id (the service fails over into it) and
  current revision;
- ``revisions`` (key: ``APP N``): every version of each app as it was applied (the app JSON,
  the restart generation, what changed), numbered 1, 2, ... per app: the history and what a
  rollback returns to (the newest ``KEEP_REVISIONS`` are kept);
- ``instances`` (key: the task id): each live instance (its task, version, agent, ports),
  written *before* its launch goes to the master and removed when it ends, so no task of the
  service is unknown to it after a crash;
- ``deployments`` (key: the app id): the latest deployment of each app, with its state and why
  it failed.

Each change is one transaction of the backend. Times are wall-clock seconds here; the
scheduler's are monotonic and converted at this boundary.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from corral.frameworks.service.records import Delete, Put, Record, Records, StoreError
from corral.frameworks.service.sqlite_records import SqliteRecords
from corral.frameworks.service.tenancy import NOBODY, Owner
from corral.frameworks.serving.instances import Instance

DB_FILE = "serving.db"
KEEP_REVISIONS = 100

DeploymentState = Literal["running", "succeeded", "failed", "superseded"]

__all__ = ["DB_FILE", "AppRecord", "DeploymentRecord", "Revision", "Store", "StoreError"]


@dataclass(frozen=True)
class AppRecord:
    id: str
    framework_id: str
    revision: int
    deleting: bool
    created_at: float
    updated_at: float
    owner: Owner = NOBODY  # who created it (tenancy.py), kept through restarts


@dataclass(frozen=True)
class Revision:
    app_id: str
    revision: int
    spec: dict[str, Any]  # the app's JSON (AppSpec.to_json)
    restarts: int
    change: str
    created_at: float


@dataclass
class DeploymentRecord:
    app_id: str
    revision: int
    version: str
    state: DeploymentState
    reason: str
    failures: int
    started_at: float
    ended_at: float | None = None


def _revision_key(app_id: str, number: int) -> str:
    return f"{app_id} {number}"  # an app id has no whitespace (app.py)


class Store:
    def __init__(self, records: Records) -> None:
        self.records = records
        self.path = records.describe()
        # Indexes of what the records hold, kept with every write.
        self._revisions: dict[str, set[int]] = defaultdict(set)
        for r in records.all("revisions").values():
            self._revisions[r["app_id"]].add(int(r["revision"]))
        self._instances: dict[str, set[str]] = defaultdict(set)
        for task_id, r in records.all("instances").items():
            self._instances[r["app_id"]].add(task_id)

    @classmethod
    def sqlite(cls, state_dir: Path) -> Store:
        """The default store: ``serving.db`` in ``state_dir`` (an older file's tables are
        converted to records once)."""
        return cls(Records(SqliteRecords(state_dir / DB_FILE, migrate=migrate_tables)))

    def close(self) -> None:
        self.records.close()

    # -- apps and revisions -----------------------------------------------------------------

    def apps(self) -> list[AppRecord]:
        return [_app(k, r) for k, r in sorted(self.records.all("apps").items())]

    def app(self, app_id: str) -> AppRecord | None:
        r = self.records.get("apps", app_id)
        return None if r is None else _app(app_id, r)

    def add_revision(
        self,
        app_id: str,
        spec: dict[str, Any],
        restarts: int,
        change: str,
        owner: Owner = NOBODY,
    ) -> Revision:
        """The app's next revision (the first creates the app, owned by ``owner``), made
        current."""
        now = time.time()
        app = self.records.get("apps", app_id)
        number = 1 if app is None else int(app["revision"]) + 1
        rev = Revision(app_id, number, spec, restarts, change, now)
        if app is None:
            app = {
                "framework_id": "",
                "deleting": False,
                "created_at": now,
                "owner": owner.to_json(),
            }
        dropped = [n for n in self._revisions[app_id] if n <= number - KEEP_REVISIONS]
        self.records.write(
            Put("revisions", _revision_key(app_id, number), asdict(rev)),
            Put("apps", app_id, {**app, "revision": number, "updated_at": now}),
            [Delete("revisions", _revision_key(app_id, n)) for n in dropped],
        )
        self._revisions[app_id].add(number)
        self._revisions[app_id].difference_update(dropped)
        return rev

    def revisions(self, app_id: str) -> list[Revision]:
        found = (self.revision(app_id, n) for n in sorted(self._revisions.get(app_id, ())))
        return [r for r in found if r is not None]

    def revision(self, app_id: str, number: int) -> Revision | None:
        r = self.records.get("revisions", _revision_key(app_id, number))
        return None if r is None else Revision(**r)

    def set_framework_id(self, app_id: str, framework_id: str) -> None:
        self._update_app(app_id, framework_id=framework_id)

    def mark_deleting(self, app_id: str) -> None:
        self._update_app(app_id, deleting=True)

    def _update_app(self, app_id: str, **fields: Any) -> None:
        app = self.records.get("apps", app_id)
        if app is not None:
            self.records.write(Put("apps", app_id, {**app, **fields}))

    def delete_app(self, app_id: str) -> None:
        revisions = self._revisions.pop(app_id, set())
        instances = self._instances.pop(app_id, set())
        self.records.write(
            Delete("apps", app_id),
            Delete("deployments", app_id),
            [Delete("revisions", _revision_key(app_id, n)) for n in sorted(revisions)],
            [Delete("instances", t) for t in sorted(instances)],
        )

    # -- instances ----------------------------------------------------------------------------

    def put_instances(self, app_id: str, instances: list[Instance]) -> None:
        offset = time.time() - time.monotonic()
        self.records.write(
            [Put("instances", i.task_id, _instance_record(app_id, i, offset)) for i in instances]
        )
        self._instances[app_id].update(i.task_id for i in instances)

    def delete_instances(self, task_ids: list[str]) -> None:
        known = [t for t in task_ids if self.records.get("instances", t) is not None]
        apps = {t: self.records.all("instances")[t]["app_id"] for t in known}
        self.records.write([Delete("instances", t) for t in known])
        for t, app_id in apps.items():
            self._instances[app_id].discard(t)

    def forget_instances(self, app_id: str) -> None:
        self.delete_instances(sorted(self._instances.get(app_id, ())))

    def instances(self, app_id: str) -> list[Instance]:
        """The app's instances as the scheduler keeps them (times on the monotonic clock)."""
        offset = time.time() - time.monotonic()
        out = []
        for task_id in sorted(self._instances.get(app_id, ())):
            r = self.records.get("instances", task_id)
            if r is not None:
                out.append(_instance(task_id, r, offset))
        return out

    # -- deployments ------------------------------------------------------------------------

    def put_deployment(self, d: DeploymentRecord) -> None:
        self.records.write(Put("deployments", d.app_id, asdict(d)))

    def deployment(self, app_id: str) -> DeploymentRecord | None:
        r = self.records.get("deployments", app_id)
        return None if r is None else DeploymentRecord(**r)


def _app(app_id: str, r: Record) -> AppRecord:
    return AppRecord(
        app_id,
        str(r["framework_id"]),
        int(r["revision"]),
        bool(r["deleting"]),
        float(r["created_at"]),
        float(r["updated_at"]),
        Owner.from_json(r.get("owner")),
    )


def _instance_record(app_id: str, i: Instance, offset: float) -> Record:
    return {
        "app_id": app_id,
        "version": i.version,
        "agent_id": i.agent_id,
        "where": i.where,
        "ports": i.ports,
        "launched_at": i.launched_at + offset,
        "state": i.state,
        "healthy": i.healthy,
        "ready": i.ready,
        "kill_reason": i.kill_reason,
        "in_container": i.in_container,
    }


def _instance(task_id: str, r: Record, offset: float) -> Instance:
    now = time.monotonic()
    launched = float(r["launched_at"]) - offset
    inst = Instance(
        task_id, r["version"], r["agent_id"], dict(r["where"]), list(r["ports"]), launched
    )
    inst.state = r["state"]
    # Health and readiness as last seen: the checks start again at once and correct them.
    inst.healthy = r["healthy"]
    inst.ready = r["ready"]
    inst.kill_reason = r["kill_reason"]
    inst.in_container = bool(r.get("in_container", False))  # absent: stored before containers
    if inst.state == "running":
        inst.running_since = now
        if inst.healthy:
            inst.healthy_since = now
    return inst


# -- the file of an earlier version ----------------------------------------------------------


def migrate_tables(db: sqlite3.Connection) -> list[Put]:
    """``serving.db`` as versions before the records table wrote it (schema 1: a table per
    kind), as records; nothing when the file is new."""
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if "apps" not in tables:
        return []
    puts: list[Put] = []
    for app_id, fw, revision, deleting, created, updated in db.execute("SELECT * FROM apps"):
        puts.append(
            Put(
                "apps",
                app_id,
                {
                    "framework_id": fw,
                    "revision": revision,
                    "deleting": bool(deleting),
                    "created_at": created,
                    "updated_at": updated,
                },
            )
        )
    for app_id, number, spec, restarts, change, created in db.execute("SELECT * FROM revisions"):
        rev = Revision(app_id, number, json.loads(spec), restarts, change, created)
        puts.append(Put("revisions", _revision_key(app_id, number), asdict(rev)))
    for row in db.execute("SELECT * FROM instances"):
        task_id, app_id, version, agent_id, where, ports, launched, state, h, rdy, kill = row
        record = {
            "app_id": app_id,
            "version": version,
            "agent_id": agent_id,
            "where": json.loads(where),
            "ports": json.loads(ports),
            "launched_at": launched,
            "state": state,
            "healthy": None if h is None else bool(h),
            "ready": None if rdy is None else bool(rdy),
            "kill_reason": kill,
        }
        puts.append(Put("instances", task_id, record))
    for row in db.execute("SELECT * FROM deployments"):
        d = DeploymentRecord(*row)
        puts.append(Put("deployments", d.app_id, asdict(d)))
    return puts
