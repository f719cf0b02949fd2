"""One service per store: an exclusive ``flock`` on ``NAME.lock`` in the state folder.

Two processes acting on the same records would act twice (the serving service: launch every
instance twice and fight over each app's framework id), so the second one either stops at
once (``StoreLocked``, naming the holder's pid) or, as a standby, waits until the holder is
gone and then takes over. The kernel drops the lock when its holder dies however it dies
(kill -9 included), so a stale lock file never blocks a restart. flock is local to one
machine: standbys on other hosts elect their leader in ZooKeeper instead (``--zk``).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
from pathlib import Path

STANDBY_POLL_SECONDS = 1.0


class StoreLocked(Exception):
    """Another process holds the store."""


class StoreLock:
    def __init__(self, state_dir: Path, name: str) -> None:
        self.name = name  # the service's name: its lock is NAME.lock
        self.path = state_dir / f"{name}.lock"
        self._fd: int | None = None

    def holder(self) -> str:
        """The pid written by the holder, or "?" when it cannot be read."""
        try:
            return self.path.read_text().strip() or "?"
        except OSError:
            return "?"

    def try_acquire(self) -> bool:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return True

    def acquire(self) -> None:
        if not self.try_acquire():
            raise StoreLocked(
                f"another {self.name} service (pid {self.holder()}) holds {self.path}; stop it, "
                "or start this one with --standby to take over when it is gone"
            )

    async def wait(self) -> None:
        """Poll until the lock is ours (a standby)."""
        while not self.try_acquire():
            await asyncio.sleep(STANDBY_POLL_SECONDS)

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
