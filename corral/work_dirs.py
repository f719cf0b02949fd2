"""One process per work directory: an exclusive ``flock`` on a lock file inside it.

An agent's work dir holds its identity and its tasks' checkpoints, a master's its registry:
two processes sharing one would both claim the same identity (or write the same registry).
The lock is the kernel's, so it is released when the process ends however it ends, and a
stale lock file left by a crash is no obstacle."""

from __future__ import annotations

import fcntl
from pathlib import Path
from typing import IO


class WorkDirBusy(Exception):
    pass


class WorkDirLock:
    """An exclusive flock on ``work_dir/<filename>``, held until ``release`` (or the process
    ends). ``who`` names the kind of process in the refusal ("agent", "master")."""

    def __init__(self, work_dir: Path, filename: str, who: str) -> None:
        self.path = work_dir / filename
        self.who = who
        self._file: IO[str] | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = self.path.open("a")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise WorkDirBusy(
                f"work dir {self.path.parent} is in use by another {self.who} (use --work-dir)"
            ) from None
        self._file = handle

    def release(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
