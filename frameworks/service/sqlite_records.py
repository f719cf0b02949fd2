"""The records in one SQLite file (``records.py``): the default, for a service on one host.

One table, ``records(kind, key, data)``; a ``write`` is one ``BEGIN IMMEDIATE`` transaction.
The file is in WAL mode with ``synchronous=NORMAL``: a crashed process loses nothing committed;
a power cut may lose the last writes (a service reconciles with the master after a restart).
One process writes the file at a time: the service holds ``store_lock.StoreLock`` in the same
folder for as long as it runs (a standby waits on it).

``migrate``: a service whose file predates the records table converts its old tables here,
once (the records it returns are written in the same transaction that marks the file).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path

from corral.frameworks.service.records import Op, Put, Record, StoreError, encode

LAYOUT = "1"  # meta 'records': the version of this table's layout

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS records (
    kind TEXT NOT NULL,
    key TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (kind, key)
);
"""

Migration = Callable[[sqlite3.Connection], list[Put]]


class SqliteRecords:
    def __init__(self, path: Path, migrate: Migration | None = None) -> None:
        self.path = path
        try:
            self.db = sqlite3.connect(path, isolation_level=None)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.executescript(_SCHEMA)
            row = self.db.execute("SELECT value FROM meta WHERE key='records'").fetchone()
            if row is None:
                old = migrate(self.db) if migrate is not None else []
                self.db.execute("BEGIN IMMEDIATE")
                self._put_all(old)
                self.db.execute("INSERT INTO meta VALUES ('records', ?)", (LAYOUT,))
                self.db.execute("COMMIT")
            elif row[0] != LAYOUT:
                raise StoreError(f"{path}: record layout {row[0]}, this version reads {LAYOUT}")
        except sqlite3.Error as err:
            raise StoreError(f"{path}: {err}") from None

    def describe(self) -> str:
        return str(self.path)

    def load(self) -> dict[str, dict[str, Record]]:
        out: dict[str, dict[str, Record]] = {}
        try:
            for kind, key, data in self.db.execute("SELECT kind, key, data FROM records"):
                out.setdefault(kind, {})[key] = json.loads(data)
        except (sqlite3.Error, ValueError) as err:
            raise StoreError(f"{self.path}: {err}") from None
        return out

    def write(self, ops: Sequence[Op]) -> None:
        try:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                for op in ops:  # in order: a key put and then deleted ends deleted
                    if isinstance(op, Put):
                        self._put_all([op])
                    else:
                        self.db.execute(
                            "DELETE FROM records WHERE kind=? AND key=?", (op.kind, op.key)
                        )
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")
        except sqlite3.Error as err:
            raise StoreError(f"{self.path}: {err}") from None

    def _put_all(self, puts: Sequence[Put]) -> None:
        self.db.executemany(
            "INSERT OR REPLACE INTO records VALUES (?, ?, ?)",
            [(p.kind, p.key, encode(p.record).decode()) for p in puts],
        )

    def close(self) -> None:
        self.db.close()
