"""What an agent keeps across restarts: its id and secret (assigned by the master) and a lock on
its work directory, so two agents never share one checkpoint and both claim the same identity.

The secret proves the id: the master lets an agent re-register with a known id only if it
presents the secret handed out with that id."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import IO, Protocol


class AgentIdStore(Protocol):
    def load(self) -> tuple[str, str]: ...
    def save(self, agent_id: str, secret: str) -> None: ...


class MemoryAgentIdStore:
    """For simulated agents: thousands of them in one process, ids gone with the process."""

    def __init__(self, agent_id: str = "", secret: str = "") -> None:
        self.agent_id = agent_id
        self.secret = secret

    def load(self) -> tuple[str, str]:
        return self.agent_id, self.secret

    def save(self, agent_id: str, secret: str) -> None:
        self.agent_id, self.secret = agent_id, secret


class FileAgentIdStore:
    """``work_dir/agent_id`` (the id, then the secret, a line each), replaced atomically so a
    crash never leaves half an identity. Owner-only: the secret is a credential."""

    def __init__(self, work_dir: Path) -> None:
        self.path = work_dir / "agent_id"

    def load(self) -> tuple[str, str]:
        try:
            lines = self.path.read_text().splitlines()
        except FileNotFoundError:
            return "", ""
        agent_id = lines[0].strip() if lines else ""
        secret = lines[1].strip() if len(lines) > 1 else ""  # files from before secrets: none
        return agent_id, secret

    def save(self, agent_id: str, secret: str) -> None:
        tmp = self.path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(f"{agent_id}\n{secret}\n")
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
