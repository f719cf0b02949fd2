"""The registry in a SQLite file (WAL, fsync on every commit): the default with --work-dir.

Agents' and frameworks' infos are stored as their wire messages (AgentInfo, FrameworkInfo), so
a field added to the contract is kept without a schema change. The file holds agents' secrets:
it is created readable by its owner only, in a directory made (or, if it exists, changed to)
owner-only. A registry that vanished while the master was stopped is noticed by the marker
beside it and refused (identity.py). A write that fails is reported with SQLite's own cause
(a full disk is SQLITE_FULL), never with what failed after it.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sqlite3
import stat
from collections.abc import Sequence
from pathlib import Path

from google.protobuf.message import DecodeError

from corral.master.core.durable import (
    AgentEntry,
    Change,
    DeletePriorityClass,
    FrameworkEntry,
    PutAgent,
    PutFramework,
    PutPriorityClass,
    PutQuota,
    PutWeight,
    RegistryState,
    RemoveAgent,
)
from corral.master.registry import maintenance_json
from corral.master.registry.identity import (
    Marker,
    new_marker,
    read_marker,
    replaced,
    vanished,
    write_marker,
)
from corral.master.registry.interface import RegistryError
from corral.master.registry.memory import MemoryRegistry
from corral.master.registry.prune import MAX_REMOVED_FRAMEWORKS
from corral.master.wire.convert import (
    WireError,
    agent_spec_from_pb,
    agent_spec_to_pb,
    framework_spec_from_pb,
    framework_spec_to_pb,
)
from corral.priority import PriorityClass, class_from_json
from corral.roles import Quota
from corral.v1 import common_pb2 as pb

FILENAME = "registry.db"
SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS agents (
    agent_id TEXT PRIMARY KEY,
    info BLOB NOT NULL,
    secret TEXT NOT NULL,
    registered_at REAL NOT NULL,
    unreachable_at REAL
);
CREATE TABLE IF NOT EXISTS frameworks (
    framework_id TEXT PRIMARY KEY,
    info BLOB NOT NULL,
    registered_at REAL NOT NULL,
    disconnected_at REAL,
    removed_at REAL
);
CREATE TABLE IF NOT EXISTS weights (role TEXT PRIMARY KEY, weight REAL NOT NULL);
CREATE TABLE IF NOT EXISTS quotas (
    role TEXT PRIMARY KEY,
    guarantee TEXT NOT NULL,  -- JSON [cpus, mem, disk, gpus]
    quota_limit TEXT NOT NULL  -- JSON, null for unlimited
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);  -- registry_id, ...
-- An agent's maintenance (cordoned, draining) as JSON: a table of its own, so a registry
-- written before it existed is read and written as it is.
CREATE TABLE IF NOT EXISTS agent_maintenance (
    agent_id TEXT PRIMARY KEY,
    maintenance TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS priority_classes (
    name TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,  -- the order of operators' changes (a new global default last)
    body TEXT  -- the class as JSON; NULL: deleted
);
"""


class SqliteRegistry:
    blocking = True  # waits on a file: applied in a worker thread (interface.py)

    def __init__(self, path: Path, *, accept_empty: bool = False) -> None:
        """Open (or make) the registry at ``path``. ``accept_empty``: start with a new, empty
        registry where the one the marker names is gone (identity.py, rule 3)."""
        self.path = path
        self.lost: Marker | None = None  # the registry given up for an empty one, if any
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            # mkdir's mode leaves a directory that exists alone: one made by hand or under
            # another umask is made owner-only here, as documented (it holds secrets).
            if stat.S_IMODE(path.parent.stat().st_mode) != 0o700:
                os.chmod(path.parent, 0o700)
            marker = read_marker(path)
            gone = _gone(path)
            if marker is not None and gone:
                self._give_up(marker, gone, accept_empty)
                # A write-ahead log left by the lost registry must not be replayed into the
                # new file.
                for suffix in ("-wal", "-shm"):
                    Path(f"{path}{suffix}").unlink(missing_ok=True)
                marker = None
            # Created 0600 before SQLite opens it (SQLite gives its -wal file the same mode).
            os.close(os.open(path, os.O_CREAT | os.O_RDWR, 0o600))
            # check_same_thread=False: the master writes from a worker thread (never two at
            # once: the core's task waits for each write).
            self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        except (OSError, sqlite3.Error) as exc:
            raise RegistryError(f"cannot open the registry {path}: {exc}") from None
        try:
            self._prepare(marker, accept_empty)
        except BaseException:
            self._db.close()
            raise

    def _give_up(self, marker: Marker, how: str, accept_empty: bool) -> None:
        """identity.py, rule 3: refuse, or (accepted) go on with a new registry."""
        if not accept_empty:
            raise vanished(self.path, marker, how)
        self.lost = marker

    def _prepare(self, marker: Marker | None, accept_empty: bool) -> None:
        """Settings, schema and identity (identity.py, rules 1-5)."""
        path = self.path
        try:
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise RegistryError(
                    f"registry {path} has schema version {version}, newer than this corral's "
                    f"{SCHEMA_VERSION}: run the newer corral, or restore an older backup"
                )
            if marker is not None and version == 0:
                self._give_up(marker, "not a Corral registry", accept_empty)
                marker = None
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")  # a commit is on disk when it returns
            self._db.executescript(_SCHEMA)
            self._db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            found = dict(self._db.execute("SELECT key, value FROM meta"))
            if "registry_id" in found:
                mine = Marker(found["registry_id"], float(found.get("created_at", 0.0)))
                if marker is not None and marker.registry_id != mine.registry_id:
                    raise replaced(path, marker, mine.registry_id)
            else:
                # New, or made before markers: it takes the marker's id if there is one.
                mine = marker if marker is not None else new_marker()
                self._db.executemany(
                    "INSERT INTO meta VALUES (?, ?)",
                    (("registry_id", mine.registry_id), ("created_at", repr(mine.created_at))),
                )
            if marker is None:
                write_marker(path, mine)  # after the database holds the id (rule 1)
            self.registry_id = mine.registry_id
        except (OSError, sqlite3.Error) as exc:
            raise RegistryError(f"cannot open the registry {path}: {exc}") from None

    def describe(self) -> str:
        return f"sqlite:{self.path}"

    def load(self) -> RegistryState:
        try:
            db = self._db
            agents = tuple(
                AgentEntry(
                    spec=agent_spec_from_pb(pb.AgentInfo.FromString(info)),
                    secret=secret,
                    registered_at=registered_at,
                    unreachable_at=unreachable_at,
                    maintenance=maintenance_json.from_json(
                        None if maintenance is None else json.loads(maintenance)
                    ),
                )
                for info, secret, registered_at, unreachable_at, maintenance in db.execute(
                    "SELECT info, secret, registered_at, unreachable_at, m.maintenance "
                    "FROM agents LEFT JOIN agent_maintenance AS m USING (agent_id) "
                    "ORDER BY registered_at, agent_id"
                )
            )
            frameworks = tuple(
                FrameworkEntry(
                    spec=framework_spec_from_pb(pb.FrameworkInfo.FromString(info)),
                    registered_at=registered_at,
                    disconnected_at=disconnected_at,
                    removed_at=removed_at,
                )
                for info, registered_at, disconnected_at, removed_at in db.execute(
                    "SELECT info, registered_at, disconnected_at, removed_at FROM frameworks "
                    "ORDER BY registered_at, framework_id"
                )
            )
            weights = tuple(db.execute("SELECT role, weight FROM weights ORDER BY role"))
            quotas = tuple(
                (role, _quota(guarantee, limit))
                for role, guarantee, limit in db.execute(
                    "SELECT role, guarantee, quota_limit FROM quotas ORDER BY role"
                )
            )
            classes = tuple(
                (name, None if body is None else class_from_json(json.loads(body)))
                for name, body in db.execute("SELECT name, body FROM priority_classes ORDER BY seq")
            )
        except (sqlite3.Error, DecodeError, WireError, ValueError, TypeError) as exc:
            raise RegistryError(f"cannot read the registry {self.path}: {exc}") from None
        return RegistryState(
            agents=agents,
            frameworks=frameworks,
            weights=weights,
            quotas=quotas,
            priority_classes=classes,
            # A registry started over a lost one (identity.py, rule 3) does not list the agents
            # the lost one admitted: they come back with tasks the master must take in.
            durable=self.lost is None,
        )

    def apply(self, changes: Sequence[Change]) -> None:
        db = self._db
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                pruned = False
                for change in changes:
                    pruned |= _write(db, change)
                if pruned:
                    db.execute(
                        "DELETE FROM frameworks WHERE removed_at IS NOT NULL AND framework_id "
                        "NOT IN (SELECT framework_id FROM frameworks WHERE removed_at IS NOT "
                        "NULL ORDER BY removed_at DESC LIMIT ?)",
                        (MAX_REMOVED_FRAMEWORKS,),
                    )
                db.execute("COMMIT")
            except BaseException:
                # SQLite rolls back by itself after some errors (a full disk among them): a
                # second ROLLBACK would fail and hide the cause behind "cannot rollback".
                # The error being raised is the cause worth reporting, not the rollback's own.
                if db.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        db.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise RegistryError(
                f"cannot write the registry {self.path}: {_cause(exc, self.path)}"
            ) from None

    def close(self) -> None:
        self._db.close()


def _gone(path: Path) -> str:
    """How the database file is gone ("missing", "empty (0 bytes)"), or "" if it is there."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return "missing"
    return "empty (0 bytes)" if size == 0 else ""


def _cause(exc: sqlite3.Error, path: Path) -> str:
    """SQLite's message with its error name, and for a full disk what to do about it."""
    name = getattr(exc, "sqlite_errorname", "")
    text = f"{exc} ({name})" if name else str(exc)
    if name == "SQLITE_FULL":
        try:
            st = os.statvfs(path.parent)
            free = f"{st.f_bavail * st.f_frsize / 2**20:.1f} MiB free there now"
        except OSError:
            free = "free space unknown"
        text += (
            f": the registry could not grow: the file system holding {path.parent} is full "
            f"(ENOSPC; {free}) or the file reached a size limit. Make room, then start the "
            "master again (nothing of this write was kept)"
        )
    return text


def _write(db: sqlite3.Connection, change: Change) -> bool:
    """Apply one change; True if it removed a framework (the removed ones need pruning)."""
    if isinstance(change, PutAgent):
        a = change.entry
        db.execute(
            "INSERT OR REPLACE INTO agents VALUES (?, ?, ?, ?, ?)",
            (
                a.agent_id,
                agent_spec_to_pb(a.spec, pb.AgentInfo()).SerializeToString(),
                a.secret,
                a.registered_at,
                a.unreachable_at,
            ),
        )
        if a.maintenance is None:
            db.execute("DELETE FROM agent_maintenance WHERE agent_id = ?", (a.agent_id,))
        else:
            db.execute(
                "INSERT OR REPLACE INTO agent_maintenance VALUES (?, ?)",
                (a.agent_id, json.dumps(maintenance_json.to_json(a.maintenance))),
            )
    elif isinstance(change, RemoveAgent):
        db.execute("DELETE FROM agents WHERE agent_id = ?", (change.agent_id,))
        db.execute("DELETE FROM agent_maintenance WHERE agent_id = ?", (change.agent_id,))
    elif isinstance(change, PutFramework):
        f = change.entry
        db.execute(
            "INSERT OR REPLACE INTO frameworks VALUES (?, ?, ?, ?, ?)",
            (
                f.framework_id,
                framework_spec_to_pb(f.spec, pb.FrameworkInfo()).SerializeToString(),
                f.registered_at,
                f.disconnected_at,
                f.removed_at,
            ),
        )
        return f.removed_at is not None
    elif isinstance(change, PutWeight):
        db.execute("INSERT OR REPLACE INTO weights VALUES (?, ?)", (change.role, change.weight))
    elif isinstance(change, PutPriorityClass | DeletePriorityClass):
        pc: PriorityClass | None = (
            change.priority_class if isinstance(change, PutPriorityClass) else None
        )
        db.execute(
            "INSERT OR REPLACE INTO priority_classes VALUES "
            "(?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM priority_classes), ?)",
            (change.name, None if pc is None else json.dumps(pc.to_json())),
        )
    elif isinstance(change, PutQuota):
        if change.quota.is_none():
            db.execute("DELETE FROM quotas WHERE role = ?", (change.role,))
        else:
            limit = [None if v == math.inf else v for v in change.quota.limit]
            db.execute(
                "INSERT OR REPLACE INTO quotas VALUES (?, ?, ?)",
                (change.role, json.dumps(list(change.quota.guarantee)), json.dumps(limit)),
            )
    return False


def _quota(guarantee: str, limit: str) -> Quota:
    g = [float(v) for v in json.loads(guarantee)]
    lim = [math.inf if v is None else float(v) for v in json.loads(limit)]
    if len(g) != 4 or len(lim) != 4:
        raise ValueError(f"a quota has {len(g)} and {len(lim)} amounts, not 4 and 4")
    return Quota(guarantee=(g[0], g[1], g[2], g[3]), limit=(lim[0], lim[1], lim[2], lim[3]))


def open_registry(
    work_dir: Path | None, *, accept_empty: bool = False
) -> SqliteRegistry | MemoryRegistry:
    """The master's registry: a SQLite file in ``work_dir``, or memory without one."""
    if work_dir is None:
        return MemoryRegistry()
    return SqliteRegistry(work_dir / FILENAME, accept_empty=accept_empty)
