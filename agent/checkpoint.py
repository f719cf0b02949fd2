"""What an agent keeps across restarts: its id and secret (assigned by the master), the
configuration that id was registered with, its tasks (see the layout below), and a lock on its
work directory, so two agents never share one checkpoint and both claim the same identity.

The secret proves the id: the master lets an agent re-register with a known id only if it
presents the secret handed out with that id."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from google.protobuf.message import DecodeError

from corral import work_dirs
from corral.v1 import common_pb2
from corral.work_dirs import WorkDirBusy as WorkDirBusy

_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]")


@dataclass(frozen=True, slots=True)
class AgentIdentity:
    """What the master handed out at registration: the id, the secret that proves it, and the
    principal (certificate) the id was issued to. The agent presents all three when it
    re-registers; the master refuses the id to any other certificate."""

    agent_id: str = ""
    secret: str = ""
    principal: str = ""


class AgentIdStore(Protocol):
    def load(self) -> AgentIdentity: ...
    def save(self, identity: AgentIdentity) -> None: ...


class MemoryAgentIdStore:
    """For simulated agents: thousands of them in one process, ids gone with the process."""

    def __init__(self, identity: AgentIdentity | None = None) -> None:
        self.identity = identity or AgentIdentity()

    def load(self) -> AgentIdentity:
        return self.identity

    def save(self, identity: AgentIdentity) -> None:
        self.identity = identity


class FileAgentIdStore:
    """``work_dir/agent_id`` (the id, the secret, the principal, a line each), replaced
    atomically so a crash never leaves half an identity. Owner-only: the secret is a
    credential. A file written before secrets or principals were kept has fewer lines: those
    are empty."""

    def __init__(self, work_dir: Path) -> None:
        self.path = work_dir / "agent_id"

    def load(self) -> AgentIdentity:
        try:
            lines = self.path.read_text().splitlines()
        except FileNotFoundError:
            return AgentIdentity()
        fields = [line.strip() for line in lines[:3]]
        return AgentIdentity(*fields)

    def save(self, identity: AgentIdentity) -> None:
        tmp = self.path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(f"{identity.agent_id}\n{identity.secret}\n{identity.principal}\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)


class WorkDirLock(work_dirs.WorkDirLock):
    """An exclusive flock on ``work_dir/agent.lock``, released when the agent (process) ends."""

    def __init__(self, work_dir: Path) -> None:
        super().__init__(work_dir, "agent.lock", "agent")


# --- what survives an agent restart besides its id: its configuration and its tasks -------
#
# WORK_DIR/agent.json                           the configuration the id was registered with
# WORK_DIR/tasks/<framework>/<task>/task.json   the core's: TaskInfo, latest status, the
#                                               statuses not yet acknowledged (CheckpointTask)
#                                  .../process.json  the executor's: shim pid + start time, the
#                                               task's pid (= its process group), sandbox
#                                  .../exit_status   the shim's: how the task's process ended
#
# Every file has one writer and is replaced atomically (temp file + os.replace), so a crash
# leaves the old version or the new one, never half of one. The agent id and configuration are
# fsynced (rare, and an identity must not be torn by a host crash); task files are not (a host
# crash ends the tasks anyway, and an unreadable task file is skipped with a warning).


def safe_name(text: str) -> str:
    """A path component from an id: no separators, no dot-dot, never empty."""
    name = _UNSAFE.sub("_", text) or "_"
    return "_" + name if name in {".", ".."} else name


def _dir_name(text: str) -> str:
    """``safe_name``, made unique when it had to change something (ids differing only in
    unsafe characters must not share a checkpoint)."""
    name = safe_name(text)
    if name == text:
        return name
    return f"{name}.{hashlib.sha256(text.encode()).hexdigest()[:12]}"


def task_dir(work_dir: Path, framework_id: str, task_id: str) -> Path:
    return work_dir / "tasks" / _dir_name(framework_id) / _dir_name(task_id)


def write_atomically(path: Path, data: bytes, *, fsync: bool = False) -> None:
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def read_json(path: Path) -> dict[str, Any] | None:
    """The object in ``path``; None when it is missing. Raises ValueError when unreadable."""
    try:
        data = json.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a JSON object")
    return data


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


@dataclass(frozen=True, slots=True)
class TaskRecord:
    """One task as its checkpoint holds it (``process`` and ``exit_status`` may be None)."""

    directory: Path
    task: common_pb2.TaskInfo
    framework_id: str
    latest: common_pb2.TaskStatus
    pending: tuple[common_pb2.TaskStatus, ...]
    process: dict[str, Any] | None
    exit_status: dict[str, Any] | None


class TaskCheckpoints:
    """``WORK_DIR/tasks``: the core's task files, and the loading of everything at start."""

    def __init__(self, work_dir: Path) -> None:
        self.work_dir = work_dir
        self.root = work_dir / "tasks"

    def save(
        self,
        task: common_pb2.TaskInfo,
        framework_id: str,
        latest: common_pb2.TaskStatus,
        pending: list[common_pb2.TaskStatus],
    ) -> None:
        directory = task_dir(self.work_dir, framework_id, task.task_id)
        directory.mkdir(parents=True, exist_ok=True)
        record = {
            "version": 1,
            "framework_id": framework_id,
            "task_id": task.task_id,
            "task": _b64(task.SerializeToString()),
            "latest": _b64(latest.SerializeToString()),
            "pending": [_b64(s.SerializeToString()) for s in pending],
        }
        write_atomically(directory / "task.json", json.dumps(record).encode())

    def forget(self, framework_id: str, task_id: str) -> None:
        directory = task_dir(self.work_dir, framework_id, task_id)
        shutil.rmtree(directory, ignore_errors=True)
        with contextlib.suppress(OSError):  # the framework's folder, once empty
            directory.parent.rmdir()

    def load(self) -> tuple[list[TaskRecord], list[str]]:
        """Every task checkpointed, and a problem line per folder that could not be read."""
        records: list[TaskRecord] = []
        problems: list[str] = []
        if not self.root.is_dir():
            return records, problems
        for directory in sorted(p for p in self.root.glob("*/*") if p.is_dir()):
            try:
                record = self._load_one(directory)
            except (ValueError, KeyError, TypeError, DecodeError) as exc:
                problems.append(f"{directory}: {exc}")
                continue
            if record is not None:
                records.append(record)
        return records, problems

    @staticmethod
    def _load_one(directory: Path) -> TaskRecord | None:
        data = read_json(directory / "task.json")
        if data is None:
            return None  # a folder the executor made for a task being forgotten
        task = common_pb2.TaskInfo.FromString(base64.b64decode(data["task"]))
        latest = common_pb2.TaskStatus.FromString(base64.b64decode(data["latest"]))
        pending = tuple(
            common_pb2.TaskStatus.FromString(base64.b64decode(s)) for s in data["pending"]
        )
        return TaskRecord(
            directory=directory,
            task=task,
            framework_id=str(data["framework_id"]),
            latest=latest,
            pending=pending,
            process=read_json(directory / "process.json"),
            exit_status=read_json(directory / "exit_status"),
        )


class ConfigChanged(Exception):
    """The agent's configuration differs from the one its checkpointed id was registered with."""


class AgentConfigCheckpoint:
    """``WORK_DIR/agent.json``: hostname, resources, attributes and taints of the agent id.

    The rule (Mesos' too): an agent id stands for one configuration. Started again with a
    different one while ``agent_id`` exists, the agent refuses to start (``ConfigChanged``)
    instead of re-registering an id whose tasks were placed on other resources. Without
    ``agent_id`` (a first start, or after deleting it to join as a new agent) the configuration
    is simply recorded."""

    FIELDS = ("hostname", "resources", "attributes", "taints")

    def __init__(self, work_dir: Path) -> None:
        self.work_dir = work_dir
        self.path = work_dir / "agent.json"

    def load(self) -> dict[str, Any] | None:
        try:
            return read_json(self.path)
        except ValueError:
            return None

    def check(self, current: dict[str, Any]) -> None:
        saved = self.load()
        if saved is None:
            return
        changed = [
            f"{name} {saved.get(name)!r} -> {current[name]!r}"
            for name in self.FIELDS
            if saved.get(name) != current[name]
        ]
        if changed:
            raise ConfigChanged(
                f"the agent configuration changed since its last run in {self.work_dir} "
                f"({'; '.join(changed)}): start it with the previous configuration to keep its "
                f"agent id and tasks, or delete {self.work_dir / 'agent_id'} to join as a new "
                "agent (the old agent's tasks are then killed)"
            )

    def save(self, current: dict[str, Any]) -> None:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        write_atomically(self.path, json.dumps(current, sort_keys=True).encode(), fsync=True)
