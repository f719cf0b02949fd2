"""The services scaffold's records on SQLite (a real file): a write is all or nothing, the
memory copy and the file agree across opens, ops apply in order, and bad records are refused.
tests/integration/test_service_records_zk.py holds ZooKeeper's backend to the same contract."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from corral.frameworks.service.records import (
    MAX_RECORD_BYTES,
    Delete,
    Put,
    Records,
    RecordStore,
    StoreError,
)
from corral.frameworks.service.sqlite_records import SqliteRecords

Open = Callable[[], RecordStore]


def check_the_contract(open_backend: Open) -> None:
    """What every backend does, for the backends' tests."""
    r = Records(open_backend())
    r.write(Put("apps", "web", {"n": 1}), [Put("revisions", "web 1", {"spec": {"a": [1]}})])
    r.write(Put("apps", "a/b.c", {"n": 2}))  # any characters in a key
    r.write(Put("apps", "web", {"n": 3}), Delete("apps", "web"), Put("apps", "web", {"n": 4}))
    r.write(Put("gone", "x", {}), Delete("gone", "x"))
    r.write(Delete("apps", "never-there"))
    assert r.get("apps", "web") == {"n": 4}
    # A record too large fails the whole write: nothing of it is kept, in memory or not.
    with pytest.raises(StoreError, match="over the limit"):
        r.write(Put("apps", "web", {"n": 5}), Put("apps", "big", {"x": "y" * MAX_RECORD_BYTES}))
    with pytest.raises(StoreError, match="a kind and a key"):
        r.write(Put("apps", "", {}))
    assert r.get("apps", "web") == {"n": 4} and r.get("apps", "big") is None
    r.close()
    again = Records(open_backend())
    assert dict(again.all("apps")) == {"web": {"n": 4}, "a/b.c": {"n": 2}}
    assert dict(again.all("revisions")) == {"web 1": {"spec": {"a": [1]}}}
    assert dict(again.all("gone")) == {}
    again.close()


def test_sqlite_records_keep_the_contract(tmp_path: Path) -> None:
    check_the_contract(lambda: SqliteRecords(tmp_path / "s.db"))


def test_a_file_of_another_layout_is_refused_clearly(tmp_path: Path) -> None:
    SqliteRecords(tmp_path / "s.db").close()
    import sqlite3

    db = sqlite3.connect(tmp_path / "s.db")
    db.execute("UPDATE meta SET value='9' WHERE key='records'")
    db.commit()
    db.close()
    with pytest.raises(StoreError, match="record layout 9, this version reads 1"):
        SqliteRecords(tmp_path / "s.db")
    (tmp_path / "junk.db").write_text("not a database " * 100)
    with pytest.raises(StoreError, match=r"junk\.db"):
        SqliteRecords(tmp_path / "junk.db")
