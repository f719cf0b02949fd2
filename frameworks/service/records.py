"""A service's durable state as JSON records: ``(kind, key) -> record``, written by one leader.

A backend (``RecordStore``) keeps the records: SQLite beside a file lock for one host
(``sqlite_records.py``), ZooKeeper for standbys on other hosts (``zk_records.py``). ``Records``
is what a service holds: every record in memory, read from there, written through to the
backend one transaction at a time. Reads never touch the backend, so both backends read alike
and a read costs a dict lookup.

Rules:
1. ``write(ops)`` is all or nothing: every ``Put`` and ``Delete`` of the call, or none (the
   backend raises ``StoreError`` and the memory copy is unchanged).
2. One writer at a time. A backend shared by several hosts is fenced: a writer that lost its
   leadership, or was superseded by a newer leader, writes nothing and gets ``Fenced``, which
   ends the process (a service that can no longer write must not go on acting).
3. Records are JSON objects; kinds and keys are non-empty strings (any characters: backends
   encode them). A record is at most ``MAX_RECORD_BYTES`` of JSON.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

MAX_RECORD_BYTES = 512 * 1024

Record = dict[str, Any]


class StoreError(Exception):
    """The store cannot be used (another schema, not a database, unreachable, refused)."""


class Fenced(StoreError):
    """This process no longer leads: another writer took the store over (rule 2)."""


@dataclass(frozen=True, slots=True)
class Put:
    kind: str
    key: str
    record: Record


@dataclass(frozen=True, slots=True)
class Delete:
    kind: str
    key: str


Op = Put | Delete


class RecordStore(Protocol):
    """A backend: reads everything once, then writes transactions."""

    def describe(self) -> str:
        """Where the records live, for logs and the ready file."""

    def load(self) -> dict[str, dict[str, Record]]:
        """Every record: kind -> key -> record."""

    def write(self, ops: Sequence[Op]) -> None:
        """One transaction (rule 1); raises StoreError or Fenced."""

    def close(self) -> None: ...


def encode(record: Record) -> bytes:
    """A record's JSON (rule 3); StoreError when it is too large."""
    data = json.dumps(record, separators=(",", ":"), sort_keys=True).encode()
    if len(data) > MAX_RECORD_BYTES:
        raise StoreError(f"a record of {len(data)} bytes is over the limit of {MAX_RECORD_BYTES}")
    return data


def check_op(op: Op) -> None:
    if not op.kind or not op.key:
        raise StoreError(f"a record needs a kind and a key, got {op.kind!r}/{op.key!r}")


class Records:
    """Every record of a backend in memory; writes go through to it first."""

    def __init__(self, backend: RecordStore) -> None:
        self.backend = backend
        self._data: dict[str, dict[str, Record]] = backend.load()
        self.writes = 0  # transactions written (metrics)

    def describe(self) -> str:
        return self.backend.describe()

    def get(self, kind: str, key: str) -> Record | None:
        return self._data.get(kind, {}).get(key)

    def all(self, kind: str) -> Mapping[str, Record]:
        """The kind's records by key (a live view: do not change it)."""
        return self._data.get(kind, {})

    def write(self, *ops: Op | Iterable[Op]) -> None:
        """Ops, or lists of ops, as one transaction."""
        flat: list[Op] = []
        for item in ops:
            if isinstance(item, Put | Delete):
                flat.append(item)
            else:
                flat.extend(item)
        if not flat:
            return
        for op in flat:
            check_op(op)
        self.backend.write(flat)
        self.writes += 1
        for op in flat:
            records = self._data.setdefault(op.kind, {})
            if isinstance(op, Put):
                records[op.key] = op.record
            else:
                records.pop(op.key, None)

    def close(self) -> None:
        self.backend.close()
