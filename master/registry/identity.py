"""A registry that vanished is not an empty cluster: the marker beside the registry file.

A master that makes a registry writes ``registry.id`` beside ``registry.db``: the registry's id
(also kept inside the database) and when it was made. At start:

1. No marker and no database (or an empty file): a new work dir. The database is made, then
   the marker (in that order, so a crash in between leaves a database that is adopted).
2. A marker, and a database whose id is the marker's: the registry as it was.
3. A marker, and no database, or a 0-byte one, or one without Corral's data: the registry this
   work dir held is gone (deleted, truncated, a disk restored without it). Loading it as an
   empty cluster would forget every admitted agent and framework without a word, so the master
   refuses to start, naming the file and what to do, unless the operator accepts starting
   empty (``--accept-empty-registry``): then a new registry and marker are made, and the first
   start reads it as a master without a registry would (``RegistryState.durable`` False): the
   agents the lost registry admitted come back with their tasks, which are taken in.
4. A marker, and a database with another id: someone else's registry was put here; refused
   the same way. A backup of this registry has its id, so restoring one is case 2.
5. A database with no marker (a registry made before markers, or copied to a new work dir on
   purpose): adopted, and the marker written.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from corral.master.registry.interface import RegistryError

MARKER = "registry.id"


@dataclass(frozen=True, slots=True)
class Marker:
    registry_id: str
    created_at: float  # seconds since the epoch

    def describe(self) -> str:
        made = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(self.created_at))
        return f"registry {self.registry_id} (made {made})"


def new_marker(now: float | None = None) -> Marker:
    return Marker(registry_id=uuid.uuid4().hex, created_at=time.time() if now is None else now)


def marker_path(db_path: Path) -> Path:
    return db_path.parent / MARKER


def read_marker(db_path: Path) -> Marker | None:
    """The marker beside ``db_path``, None if there is none; RegistryError if unreadable."""
    path = marker_path(db_path)
    try:
        data = json.loads(path.read_text())
        return Marker(registry_id=str(data["registry_id"]), created_at=float(data["created_at"]))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise RegistryError(
            f"cannot read {path}, which says which registry this work dir holds: {exc}; "
            f"if {db_path} is the registry to use, delete {path} and start again"
        ) from None


def write_marker(db_path: Path, marker: Marker) -> None:
    """Replace the marker atomically and durably (temp file, fsync, rename, fsync the dir)."""
    path = marker_path(db_path)
    tmp = path.with_name(path.name + ".tmp")
    body = json.dumps(
        {
            "registry_id": marker.registry_id,
            "created_at": marker.created_at,
            "file": db_path.name,
            "about": "the registry this work dir holds; see docs/operations.md, 'The registry'",
        }
    )
    fd = os.open(tmp, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
    try:
        os.write(fd, body.encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def vanished(db_path: Path, marker: Marker, how: str) -> RegistryError:
    """Rule 3's refusal: what is gone, and the two ways on."""
    return RegistryError(
        f"the registry {db_path} is {how}, but {marker_path(db_path)} says this work dir held "
        f"{marker.describe()}: starting would forget every agent and framework it admitted. "
        f"Restore {db_path} from a backup (docs/operations.md, 'Backing up and restoring'), "
        "or start with an empty cluster with --accept-empty-registry"
    )


def replaced(db_path: Path, marker: Marker, found: str) -> RegistryError:
    """Rule 4's refusal."""
    return RegistryError(
        f"the registry {db_path} is registry {found}, but {marker_path(db_path)} says this "
        f"work dir held {marker.describe()}. Put that registry (or a backup of it) back, or, "
        f"to make this one the work dir's registry, delete {marker_path(db_path)}"
    )
