"""The registry's own faults, on real SQLite files (issue #30, item 9): a registry that vanished
while the master was stopped is refused rather than read as an empty cluster, a full disk is
reported as such, and a work dir that exists is made owner-only."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import stat
from pathlib import Path

import pytest

from corral.master.core.durable import PutWeight
from corral.master.registry import RegistryError, SqliteRegistry, open_registry
from corral.master.registry.identity import MARKER


def _made(work: Path) -> Path:
    """A work dir whose registry holds one weight; closed."""
    registry = open_registry(work)
    registry.apply([PutWeight("web", 3.0)])
    registry.close()
    return work / "registry.db"


@pytest.mark.parametrize("how", ["truncated", "deleted"])
def test_a_registry_that_vanished_is_refused_naming_the_file_and_the_way_on(
    tmp_path: Path, how: str
) -> None:
    db = _made(tmp_path / "work")
    if how == "truncated":
        db.write_bytes(b"")
    else:
        db.unlink()
    with pytest.raises(RegistryError) as info:
        open_registry(tmp_path / "work")
    message = str(info.value)
    assert str(db) in message and str(tmp_path / "work" / MARKER) in message
    assert ("empty (0 bytes)" if how == "truncated" else "missing") in message
    assert "--accept-empty-registry" in message and "backup" in message
    # Refusing left the evidence as it was: no new database was made in its place.
    assert (not db.exists()) if how == "deleted" else db.stat().st_size == 0


def test_accepting_an_empty_registry_starts_a_new_one_and_drops_the_old_log(
    tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    db = _made(work)
    old_id = json.loads((work / MARKER).read_text())["registry_id"]
    db.write_bytes(b"")
    wal = Path(f"{db}-wal")
    wal.write_bytes(b"a log the lost registry left behind" * 100)
    registry = open_registry(work, accept_empty=True)
    assert isinstance(registry, SqliteRegistry)
    assert registry.lost is not None and registry.lost.registry_id == old_id
    state = registry.load()
    assert state.weights == ()
    # It does not list the agents the lost one admitted: they come back with their tasks.
    assert not state.durable
    assert registry.registry_id != old_id
    registry.apply([PutWeight("batch", 2.0)])
    registry.close()
    assert json.loads((work / MARKER).read_text())["registry_id"] != old_id
    # The new registry is the work dir's own from now on: it opens without the flag.
    again = open_registry(work)
    assert again.load().weights == (("batch", 2.0),)
    assert again.load().durable
    again.close()


def test_another_registry_put_in_place_is_refused_until_its_marker_is_deleted(
    tmp_path: Path,
) -> None:
    db = _made(tmp_path / "a")
    other = _made(tmp_path / "b")
    shutil.copy(other, db)
    with pytest.raises(RegistryError, match=r"delete .*registry\.id"):
        open_registry(tmp_path / "a")
    (tmp_path / "a" / MARKER).unlink()
    adopted = open_registry(tmp_path / "a")
    assert adopted.load().weights == (("web", 3.0),)
    adopted.close()


def test_a_backup_of_the_same_registry_restores_without_a_flag(tmp_path: Path) -> None:
    work = tmp_path / "work"
    db = _made(work)
    backup = tmp_path / "backup.db"
    source = sqlite3.connect(db)
    source.backup(sqlite3.connect(backup))
    source.close()
    db.unlink()
    shutil.copy(backup, db)
    restored = open_registry(work)
    assert restored.load().weights == (("web", 3.0),)
    restored.close()


def test_a_registry_made_before_markers_is_adopted(tmp_path: Path) -> None:
    work = tmp_path / "work"
    db = _made(work)
    conn = sqlite3.connect(db)
    conn.execute("DROP TABLE meta")  # as an older Corral made it
    conn.commit()
    conn.close()
    (work / MARKER).unlink()
    registry = open_registry(work)
    assert registry.load().weights == (("web", 3.0),)
    registry.close()
    assert (work / MARKER).exists()
    db.write_bytes(b"")  # and from now on its loss is noticed
    with pytest.raises(RegistryError, match="empty"):
        open_registry(work)


def test_a_full_disk_is_reported_as_such_and_the_batch_leaves_nothing(tmp_path: Path) -> None:
    registry = SqliteRegistry(tmp_path / "registry.db")
    registry.apply([PutWeight("web", 1.0)])
    # SQLite's own size limit fails a write with SQLITE_FULL, as a full disk (ENOSPC) does.
    pages = registry._db.execute("PRAGMA page_count").fetchone()[0]
    registry._db.execute(f"PRAGMA max_page_count={pages}")
    big = [PutWeight(f"role-{i}-" + "x" * 200, 1.0) for i in range(2000)]
    with pytest.raises(RegistryError) as info:
        registry.apply(big)
    message = str(info.value)
    assert "database or disk is full" in message and "SQLITE_FULL" in message
    assert "ENOSPC" in message and "MiB free" in message
    assert "rollback" not in message
    assert registry.load().weights == (("web", 1.0),)
    registry.close()


def test_a_work_dir_that_exists_is_made_owner_only(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir(mode=0o755)
    os.chmod(work, 0o755)
    registry = open_registry(work)
    assert stat.S_IMODE(os.stat(work).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(work / "registry.db").st_mode) == 0o600
    assert stat.S_IMODE(os.stat(work / MARKER).st_mode) == 0o600
    registry.close()


def test_an_unreadable_marker_is_refused_with_the_way_on(tmp_path: Path) -> None:
    work = tmp_path / "work"
    _made(work)
    (work / MARKER).write_text("{not json")
    with pytest.raises(RegistryError, match=re.escape(f"cannot read {work / MARKER}") + ".*delete"):
        open_registry(work)
