"""What an agent keeps across restarts: its id (assigned by the master) and a lock on its work
directory, so two agents never share one checkpoint and both claim the same identity."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import IO, Protocol


class AgentIdStore(Protocol):
    def load(self) -> str: ...
    def save(self, agent_id: str) -> None: ...


class MemoryAgentIdStore:
    """For simulated agents: thousands of them in one process, ids gone with the process."""

    def __init__(self, agent_id: str = "") -> None:
        self.agent_id = agent_id

    def load(self) -> str:
        return self.agent_id

    def save(self, agent_id: str) -> None:
        self.agent_id = agent_id


class FileAgentIdStore:
    """``work_dir/agent_id``, replaced atomically so a crash never leaves half an id."""

    def __init__(self, work_dir: Path) -> None:
        self.path = work_dir / "agent_id"

    def load(self) -> str:
        try:
            return self.path.read_text().strip()
        except FileNotFoundError:
            return ""

    def save(self, agent_id: str) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(agent_id + "\n")
        os.replace(tmp, self.path)


class WorkDirBusy(Exception):
    pass


class WorkDirLock:
    """An exclusive flock on ``work_dir/agent.lock``, released when the agent (process) ends."""

    def __init__(self, work_dir: Path) -> None:
        self.path = work_dir / "agent.lock"
        self._file: IO[str] | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = self.path.open("a")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise WorkDirBusy(
                f"work dir {self.path.parent} is in use by another agent (use --work-dir)"
            ) from None
        self._file = handle

    def release(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
