"""Who acts: one process per store. ``FileLeadership`` (the default: a ``flock`` beside the
SQLite file, one host) or ``ZooKeeperLeadership`` (``--zk``: an election in ZooKeeper and the
records there, fenced, so standbys can run on other hosts). ``process.py`` drives either:

1. ``prepare()``: reach what decides (ZooKeeper; for the lock, nothing).
2. ``join(info)``: stand as a contender, ``info`` saying where this process serves (a ZooKeeper
   standby already serves its API, answering 503 and naming the leader; a lock standby binds
   nothing: the leader on the same host holds the port).
3. ``acquire(stop)``: lead, or wait as a standby (False when ``stop`` came first). The lock
   without ``standby`` raises ``StoreLocked`` at once instead.
4. ``open_records()``: the records, written only while this process leads.
5. ``lost`` is set when leadership ends under a running leader (ZooKeeper: the connection or
   the session went): the process stops acting at once and exits ``LEADERSHIP_LOST``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from corral.frameworks.sdk.detector import parse_zk_url
from corral.frameworks.sdk.zk_election import Contender
from corral.frameworks.service.records import Records, StoreError
from corral.frameworks.service.sqlite_records import Migration, SqliteRecords
from corral.frameworks.service.store_lock import StoreLock
from corral.frameworks.service.zk_records import ZooKeeperRecords

LEADERSHIP_LOST = 3  # the exit status of a service whose leadership ended (as a master's)
DEFAULT_SESSION_TIMEOUT = 6.0  # a standby takes over this long after the leader dies
FIRST_READ_SECONDS = 1.0


class Leadership(Protocol):
    binds_early: bool  # serve the API (as a standby) before leading
    lost: asyncio.Event

    async def prepare(self) -> None: ...

    async def join(self, info: dict[str, Any]) -> None: ...

    async def acquire(self, stop: asyncio.Event, waiting: Callable[[str], None]) -> bool:
        """Lead (True), or wait as a standby, telling ``waiting`` whom it waits for."""

    async def open_records(self) -> Records: ...

    def leader(self) -> dict[str, Any] | None:
        """What the leader said of itself (``info``), when another process leads."""

    async def close(self) -> None: ...


class FileLeadership:
    binds_early = False

    def __init__(
        self, state_dir: Path, name: str, standby: bool, migrate: Migration | None = None
    ) -> None:
        self.state_dir = state_dir
        self.name = name
        self.standby = standby
        self.migrate = migrate
        self.lock = StoreLock(state_dir, name)
        self.lost = asyncio.Event()  # a flock is not lost while its process lives

    async def prepare(self) -> None:
        self.state_dir.mkdir(parents=True, exist_ok=True)

    async def join(self, info: dict[str, Any]) -> None:
        pass

    async def acquire(self, stop: asyncio.Event, waiting: Callable[[str], None]) -> bool:
        if not self.standby:
            self.lock.acquire()  # StoreLocked names the holder
            return True
        if self.lock.try_acquire():
            return True
        waiting(
            f"{self.lock.path} is held by pid {self.lock.holder()}; taking over when it is free"
        )
        locked = asyncio.ensure_future(self.lock.wait())
        stopping = asyncio.ensure_future(stop.wait())
        await asyncio.wait({locked, stopping}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if locked.done():
            return True
        locked.cancel()
        return False

    async def open_records(self) -> Records:
        return Records(SqliteRecords(self.state_dir / f"{self.name}.db", migrate=self.migrate))

    def leader(self) -> dict[str, Any] | None:
        return None

    async def close(self) -> None:
        self.lock.release()


def _info(data: bytes) -> dict[str, Any]:
    info = json.loads(data)
    if not isinstance(info, dict):
        raise ValueError("not a JSON object")
    return info


class ZooKeeperLeadership:
    binds_early = True

    def __init__(
        self,
        zk: str,
        store_root: str = "",
        session_timeout: float = DEFAULT_SESSION_TIMEOUT,
        connect_timeout: float = 10.0,
    ) -> None:
        self.hosts, self.path = parse_zk_url(zk)  # ValueError names what is wrong
        self.store_root = store_root or f"{self.path}-store"
        self.connect_timeout = connect_timeout
        self.contender = Contender(self.hosts, self.path, session_timeout, b"{}", parse=_info)
        self.lost = self.contender.lost

    async def prepare(self) -> None:
        await self.contender.connect(self.connect_timeout)  # ZooKeeperUnreachable (OSError)

    async def join(self, info: dict[str, Any]) -> None:
        self.contender.info = json.dumps(info, sort_keys=True).encode()
        await self.contender.join()

    async def acquire(self, stop: asyncio.Event, waiting: Callable[[str], None]) -> bool:
        with contextlib.suppress(TimeoutError):  # the election's first read takes a moment
            await asyncio.wait_for(self.contender.elected.wait(), FIRST_READ_SECONDS)
        if not self.contender.elected.is_set():
            leader = (self.leader() or {}).get("url", "another process")
            waiting(
                f"{leader} leads (ZooKeeper {self.hosts}{self.path}); serving 503s naming it "
                "and taking over when it is gone"
            )
        waits = {
            asyncio.ensure_future(e.wait())
            for e in (stop, self.contender.elected, self.contender.lost)
        }
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()
        return self.contender.leading and not stop.is_set()

    async def open_records(self) -> Records:
        backend = ZooKeeperRecords(self.contender.client, self.store_root, self.contender.znode)
        await asyncio.to_thread(backend.open)  # the fence: Fenced if we no longer lead
        if self.lost.is_set():
            raise StoreError("the leadership was lost while the store was being opened")
        return await asyncio.to_thread(Records, backend)

    def leader(self) -> dict[str, Any] | None:
        leader = self.contender.leader
        return leader if isinstance(leader, dict) else None

    async def close(self) -> None:
        await self.contender.close()  # a graceful stop deletes the znode: the next leads at once
