"""Port ranges for agents that share one host (a LocalCluster's, or clusters side by side).

Every agent offers a ``ports`` range, and tasks bind what they are given. Two agents offering
the same range on one host hand out the same ports, and a task of one fails to bind a port a
task of the other holds. Each LocalCluster agent therefore takes a block of ``SIZE`` ports of
its own: a lock file per block, held with ``flock`` for as long as its cluster runs, so any
process on the host (another pytest worker, another suite) skips it, and the kernel lets it go
when the holder exits, even by SIGKILL. Blocks are below the kernel's ephemeral ports (32768
and up by default), which outgoing connections take at random.

A free lock says only that no live cluster holds the block: a task outlives its agent by design,
so a cluster that died (killed, or stopped uncleanly) can leave a task listening on one of the
block's ports, and every task given that port would fail to bind it. A block with a port that
something listens on is skipped too.
"""

from __future__ import annotations

import fcntl
import os
import socket
import tempfile
from pathlib import Path

FIRST, LAST = 20000, 32767  # below net.ipv4.ip_local_port_range's default start
SIZE = 100


class NoPortBlock(RuntimeError):
    """Every block is held by another cluster."""


class PortBlock:
    """Ports ``begin``..``end`` (inclusive), reserved until ``release()``."""

    def __init__(self, begin: int, end: int, fd: int) -> None:
        self.begin, self.end = begin, end
        self._fd: int | None = fd

    @property
    def range(self) -> str:
        """The block in the ``--resources`` syntax: ``[20000-20099]``."""
        return f"[{self.begin}-{self.end}]"

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the file drops its lock
            self._fd = None


def lock_dir() -> Path:
    path = Path(tempfile.gettempdir()) / f"corral-port-blocks-{os.getuid()}"
    path.mkdir(mode=0o700, exist_ok=True)
    return path


def reserve(first: int = FIRST, last: int = LAST) -> PortBlock:
    """The first block of ``SIZE`` ports in ``first``..``last`` that no one holds. Blocks are
    one size, so a lock file (named by the block's first port) covers exactly its ports."""
    directory = lock_dir()
    for begin in range(first, last - SIZE + 2, SIZE):
        fd = os.open(directory / f"{begin}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        if _listened_on(begin, begin + SIZE - 1):
            os.close(fd)  # and with it the lock: the block is no one's, but not usable
            continue
        return PortBlock(begin, begin + SIZE - 1, fd)
    raise NoPortBlock(
        f"every block of {SIZE} ports in {first}-{last} is held by another cluster "
        "or has a port something listens on"
    )


def _listened_on(begin: int, end: int) -> bool:
    """Whether something listens on one of the ports on this host's loopback (a listener on
    any address takes those too). A connection, not a bind: a port an outgoing connection
    happens to use is no one's listener, and a refused connection on loopback costs
    microseconds."""
    for port in range(begin, end + 1):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return True
        except TimeoutError:
            return True  # a listener too busy to answer is still one
        except OSError:
            continue
    return False
