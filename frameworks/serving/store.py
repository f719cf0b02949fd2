"""The serving service's app store: a SQLite file (``serving.db`` in ``--state DIR``).

What a restarted service needs to take over without touching a running instance:

- ``apps``: each app's framework id (the service fails over into it) and current revision;
- ``revisions``: every version of each app as it was applied (the app JSON, the restart
  generation, what changed), numbered 1, 2, ... per app: the history and what a rollback
  returns to (the newest ``KEEP_REVISIONS`` are kept);
- ``instances``: each live instance (its task, version, agent, ports), written *before* its
  launch goes to the master and removed when it ends, so no task of the service is unknown
  to it after a crash;
- ``deployments``: the latest deployment of each app, with its state and why it failed.

Writes go straight to the file (WAL, ``synchronous=NORMAL``: a crashed process loses nothing
committed; a power cut may lose the last writes, which reconciliation then sorts out). Times
are wall-clock seconds here; the scheduler's are monotonic and converted at this boundary.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from corral.frameworks.serving.instances import Instance

DB_FILE = "serving.db"
KEEP_REVISIONS = 100
SCHEMA_VERSION = 1

DeploymentState = Literal["running", "succeeded", "failed", "superseded"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS apps (
    id TEXT PRIMARY KEY,
    framework_id TEXT NOT NULL DEFAULT '',
    revision INTEGER NOT NULL,
    deleting INTEGER NOT NULL DEFAULT 0,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS revisions (
    app_id TEXT NOT NULL,
    revision INTEGER NOT NULL,
    spec TEXT NOT NULL,
    restarts INTEGER NOT NULL,
    change TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (app_id, revision)
);
CREATE TABLE IF NOT EXISTS instances (
    task_id TEXT PRIMARY KEY,
    app_id TEXT NOT NULL,
    version TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    placement TEXT NOT NULL,
    ports TEXT NOT NULL,
    launched_at REAL NOT NULL,
    state TEXT NOT NULL,
    healthy INTEGER,
    ready INTEGER,
    kill_reason TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS instances_by_app ON instances (app_id);
CREATE TABLE IF NOT EXISTS deployments (
    app_id TEXT PRIMARY KEY,
    revision INTEGER NOT NULL,
    version TEXT NOT NULL,
    state TEXT NOT NULL,
    reason TEXT NOT NULL,
    failures INTEGER NOT NULL,
    started_at REAL NOT NULL,
    ended_at REAL
);
"""


class StoreError(Exception):
    """The store file cannot be used (another schema, not a database, not writable)."""


@dataclass(frozen=True)
class AppRecord:
    id: str
    framework_id: str
    revision: int
    deleting: bool
    created_at: float
    updated_at: float


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


class Store:
    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / DB_FILE
        try:
            self.db = sqlite3.connect(self.path, isolation_level=None)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.executescript(_SCHEMA)
            row = self.db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
            if row is None:
                self.db.execute("INSERT INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
            elif row[0] != str(SCHEMA_VERSION):
                raise StoreError(
                    f"{self.path}: schema {row[0]}, this version reads {SCHEMA_VERSION}"
                )
        except sqlite3.Error as err:
            raise StoreError(f"{self.path}: {err}") from None

    def close(self) -> None:
        self.db.close()

    # -- apps and revisions -----------------------------------------------------------------

    def apps(self) -> list[AppRecord]:
        rows = self.db.execute("SELECT * FROM apps ORDER BY id").fetchall()
        return [_app(r) for r in rows]

    def app(self, app_id: str) -> AppRecord | None:
        row = self.db.execute("SELECT * FROM apps WHERE id=?", (app_id,)).fetchone()
        return None if row is None else _app(row)

    def add_revision(
        self, app_id: str, spec: dict[str, Any], restarts: int, change: str
    ) -> Revision:
        """The app's next revision (the first creates the app), made current."""
        now = time.time()
        with self._transaction():
            row = self.db.execute("SELECT revision FROM apps WHERE id=?", (app_id,)).fetchone()
            number = 1 if row is None else row[0] + 1
            self.db.execute(
                "INSERT INTO revisions VALUES (?, ?, ?, ?, ?, ?)",
                (app_id, number, json.dumps(spec), restarts, change, now),
            )
            if row is None:
                self.db.execute(
                    "INSERT INTO apps VALUES (?, '', ?, 0, ?, ?)", (app_id, number, now, now)
                )
            else:
                self.db.execute(
                    "UPDATE apps SET revision=?, updated_at=? WHERE id=?", (number, now, app_id)
                )
            self.db.execute(
                "DELETE FROM revisions WHERE app_id=? AND revision<=?",
                (app_id, number - KEEP_REVISIONS),
            )
        return Revision(app_id, number, spec, restarts, change, now)

    def revisions(self, app_id: str) -> list[Revision]:
        rows = self.db.execute(
            "SELECT * FROM revisions WHERE app_id=? ORDER BY revision", (app_id,)
        ).fetchall()
        return [_revision(r) for r in rows]

    def revision(self, app_id: str, number: int) -> Revision | None:
        row = self.db.execute(
            "SELECT * FROM revisions WHERE app_id=? AND revision=?", (app_id, number)
        ).fetchone()
        return None if row is None else _revision(row)

    def set_framework_id(self, app_id: str, framework_id: str) -> None:
        self.db.execute("UPDATE apps SET framework_id=? WHERE id=?", (framework_id, app_id))

    def mark_deleting(self, app_id: str) -> None:
        self.db.execute("UPDATE apps SET deleting=1 WHERE id=?", (app_id,))

    def delete_app(self, app_id: str) -> None:
        with self._transaction():
            for table, column in (
                ("apps", "id"),
                ("revisions", "app_id"),
                ("instances", "app_id"),
                ("deployments", "app_id"),
            ):
                self.db.execute(f"DELETE FROM {table} WHERE {column}=?", (app_id,))

    # -- instances ----------------------------------------------------------------------------

    def put_instances(self, app_id: str, instances: list[Instance]) -> None:
        offset = time.time() - time.monotonic()
        with self._transaction():
            self.db.executemany(
                "INSERT OR REPLACE INTO instances VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [_instance_row(app_id, i, offset) for i in instances],
            )

    def delete_instances(self, task_ids: list[str]) -> None:
        with self._transaction():
            self.db.executemany("DELETE FROM instances WHERE task_id=?", [(t,) for t in task_ids])

    def forget_instances(self, app_id: str) -> None:
        self.db.execute("DELETE FROM instances WHERE app_id=?", (app_id,))

    def instances(self, app_id: str) -> list[Instance]:
        """The app's instances as the scheduler keeps them (times on the monotonic clock)."""
        offset = time.time() - time.monotonic()
        rows = self.db.execute(
            "SELECT * FROM instances WHERE app_id=? ORDER BY task_id", (app_id,)
        ).fetchall()
        return [_instance(r, offset) for r in rows]

    # -- deployments ------------------------------------------------------------------------

    def put_deployment(self, d: DeploymentRecord) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO deployments VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                d.app_id,
                d.revision,
                d.version,
                d.state,
                d.reason,
                d.failures,
                d.started_at,
                d.ended_at,
            ),
        )

    def deployment(self, app_id: str) -> DeploymentRecord | None:
        row = self.db.execute("SELECT * FROM deployments WHERE app_id=?", (app_id,)).fetchone()
        return None if row is None else DeploymentRecord(*row)

    # -- helpers ----------------------------------------------------------------------------

    def _transaction(self) -> _Transaction:
        return _Transaction(self.db)


class _Transaction:
    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        self.db.execute("COMMIT" if exc_type is None else "ROLLBACK")


def _app(row: tuple[Any, ...]) -> AppRecord:
    app_id, framework_id, revision, deleting, created, updated = row
    return AppRecord(app_id, framework_id, revision, bool(deleting), created, updated)


def _revision(row: tuple[Any, ...]) -> Revision:
    app_id, number, spec, restarts, change, created = row
    return Revision(app_id, number, json.loads(spec), restarts, change, created)


def _flag(value: bool | None) -> int | None:
    return None if value is None else int(value)


def _instance_row(app_id: str, i: Instance, offset: float) -> tuple[Any, ...]:
    return (
        i.task_id,
        app_id,
        i.version,
        i.agent_id,
        json.dumps(i.where),
        json.dumps(i.ports),
        i.launched_at + offset,
        i.state,
        _flag(i.healthy),
        _flag(i.ready),
        i.kill_reason,
    )


def _instance(row: tuple[Any, ...], offset: float) -> Instance:
    task_id, _, version, agent_id, where, ports, launched, state, healthy, ready, kill = row
    now = time.monotonic()
    inst = Instance(
        task_id, version, agent_id, json.loads(where), json.loads(ports), launched - offset
    )
    inst.state = state
    # Health and readiness as last seen: the checks start again at once and correct them.
    inst.healthy = None if healthy is None else bool(healthy)
    inst.ready = None if ready is None else bool(ready)
    inst.kill_reason = kill
    if state == "running":
        inst.running_since = now
        if inst.healthy:
            inst.healthy_since = now
    return inst
