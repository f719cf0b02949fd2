"""The ZooKeeper detector: follows ``PATH``'s lowest ``json.info_`` znode (detector.py).

kazoo is imported inside the functions, never at the top: ``import corral.frameworks.sdk``
(which re-exports this kernel module) must work without it, and a framework needs it only
when it is given a ``zk://`` master (``pip install 'corral[ha]'``). kazoo calls back from its
own threads; what they learn reaches the asyncio loop through ``call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from corral.broadcast import Broadcast
from corral.leader_record import LeaderInfo, leader_info, lowest_contender
from corral.logging import uncached_logger as get_logger

log = get_logger("corral.frameworks.sdk.detector")

NEEDS_KAZOO = (
    "a zk:// master needs kazoo: pip install 'corral[ha]' (or 'corral[server]', which has it)"
)


def kazoo_client(hosts: str, session_timeout: float) -> Any:
    """A kazoo client (not started) that retries its connection forever; ImportError with the
    extra to install when kazoo is missing."""
    try:
        from kazoo.client import KazooClient
    except ImportError:
        raise ImportError(NEEDS_KAZOO) from None
    return KazooClient(
        hosts=hosts,
        timeout=session_timeout,
        connection_retry={"max_tries": -1, "delay": 0.1, "backoff": 2, "max_delay": 1.0},
    )


def read_leader(client: Any, path: str) -> LeaderInfo | None:
    """The current leader under ``path`` (blocking), None if no master is there."""
    from kazoo.exceptions import NoNodeError

    while True:
        try:
            name = lowest_contender(client.get_children(path))
        except NoNodeError:
            return None
        if name is None:
            return None
        try:
            data, _stat = client.get(f"{path}/{name}")
        except NoNodeError:
            continue  # it went away between the two reads: look again
        try:
            return leader_info(data)
        except ValueError as exc:
            log.warning("unreadable leader znode", znode=f"{path}/{name}", error=str(exc))
            return None


def find_leader(hosts: str, path: str, timeout: float) -> LeaderInfo | None:
    """One look at ZooKeeper, for a command that makes one call (blocking). Raises
    TimeoutError when ZooKeeper cannot be reached within ``timeout``."""
    client = kazoo_client(hosts, session_timeout=max(timeout, 2.0))
    try:
        try:
            client.start(timeout=timeout)
        except Exception as exc:  # kazoo's own timeout error: no ZooKeeper at hosts
            raise TimeoutError(f"cannot reach ZooKeeper at {hosts} within {timeout:g} s") from exc
        return read_leader(client, path)
    finally:
        client.stop()
        client.close()


class ZooKeeperDetector:
    """Watches ``path``; ``leader()`` waits until a leader is known."""

    def __init__(self, hosts: str, path: str, session_timeout: float = 10.0) -> None:
        self.hosts = hosts
        self.path = path
        self._session_timeout = session_timeout
        self._client: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._leader: LeaderInfo | None = None
        self._changed = Broadcast()  # every agent of a simulated process waits here
        self._lock = threading.Lock()
        self._closed = False

    @property
    def current(self) -> LeaderInfo | None:
        return self._leader

    async def _ensure_started(self) -> None:
        if self._client is not None:
            return
        self._loop = asyncio.get_running_loop()
        client = kazoo_client(self.hosts, self._session_timeout)
        self._client = client
        # start() waits for the first connection; the connection retries forever (kazoo's
        # own backoff), so the wait ends when ZooKeeper answers.
        await asyncio.to_thread(client.start, None)
        await asyncio.to_thread(client.ensure_path, self.path)  # a watch needs the node
        from kazoo.recipe.watchers import ChildrenWatch

        ChildrenWatch(client, self.path, self._on_children, allow_session_lost=True)

    def _on_children(self, _children: list[str]) -> bool:
        """kazoo's thread: re-read who leads, and tell the loop."""
        if self._closed:
            return False  # stop watching
        try:
            leader = read_leader(self._client, self.path)
        except Exception as exc:  # connection lost mid-read: the next event reads again
            log.info("leader read failed", error=repr(exc))
            return True
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._set_leader, leader)
        return True

    def _set_leader(self, leader: LeaderInfo | None) -> None:
        if leader != self._leader:
            log.info(
                "leader detected",
                leader=leader.grpc if leader else None,
                master_id=leader.master_id if leader else None,
            )
            self._leader = leader
            self._changed.fire()

    async def leader(self) -> str:
        await self._ensure_started()
        while self._leader is None:
            await self._changed.wait()
        return self._leader.grpc

    def redirected(self, address: str) -> None:
        """ZooKeeper is the authority: a standby's redirect is not needed, its watch will say."""

    def failed(self, address: str) -> None:
        """Likewise: a dead leader's znode goes when its session expires."""

    async def changed(self, current: str) -> None:
        await self._ensure_started()
        while self._leader is None or self._leader.grpc == current:
            await self._changed.wait()

    async def close(self) -> None:
        self._closed = True
        client, self._client = self._client, None
        if client is not None:

            def stop() -> None:
                client.stop()
                client.close()

            await asyncio.to_thread(stop)
