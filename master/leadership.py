"""A master's part in the ZooKeeper election (Mesos' layout: detector.py in the SDK).

Rules:
1. Each master holds one ephemeral sequential znode ``PATH/json.info_NNNNNNNNNN`` whose data is
   its MasterInfo as JSON; nothing else is created under ``PATH``. The lowest sequence leads.
2. Every change of ``PATH``'s children is read again whole (a ChildrenWatch): a master learns
   it leads when its znode becomes the lowest, and a standby learns who leads.
3. The moment the session is SUSPENDED (the connection to ZooKeeper is lost) a leading master
   is told ``lost``: it stops acting at once, before its session can expire and another be
   elected, and the process ends so that it comes back as a fresh candidate. A standby only
   forgets who leads; when its session is LOST it joins again with a new znode.

kazoo calls back from its own threads; everything reaches the asyncio loop through
``call_soon_threadsafe``, so the rest of the master sees events on its own task.
"""

from __future__ import annotations

import asyncio
from typing import Any

from corral.frameworks.sdk.detector import (
    ZNODE_PREFIX,
    LeaderInfo,
    leader_info,
    lowest_contender,
)
from corral.logging import get_logger

log = get_logger("corral.master.leadership")


class ZooKeeperUnreachable(OSError):
    """ZooKeeper did not answer in time when the master started."""


class Contender:
    def __init__(self, hosts: str, path: str, session_timeout: float, info: bytes) -> None:
        self.hosts = hosts
        self.path = path
        self.session_timeout = session_timeout
        self.info = info
        self.znode = ""
        self.client: Any = None
        self.leader: LeaderInfo | None = None  # who leads, as last read (self included)
        self.leading = False
        self.elected = asyncio.Event()
        self.lost = asyncio.Event()
        self.lost_reason = ""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._rejoining = False
        # Called on the loop the moment leadership is lost, before anything else runs there.
        self.on_lost: list[Any] = []
        self._closing = False

    async def connect(self, timeout: float) -> None:
        """Open the session (raises ZooKeeperUnreachable after ``timeout``)."""
        from kazoo.client import KazooClient

        self._loop = asyncio.get_running_loop()
        self.client = KazooClient(
            hosts=self.hosts,
            timeout=self.session_timeout,
            connection_retry={"max_tries": -1, "delay": 0.1, "backoff": 2, "max_delay": 1.0},
            command_retry={"max_tries": 3, "delay": 0.1, "backoff": 2, "max_delay": 1.0},
        )
        try:
            await asyncio.to_thread(self.client.start, timeout)
        except Exception as exc:  # kazoo's timeout: nothing answered at hosts
            await asyncio.to_thread(self._close_client)
            raise ZooKeeperUnreachable(
                f"cannot reach ZooKeeper at {self.hosts} within {timeout:g} s ({exc})"
            ) from None
        self.client.add_listener(self._on_state)

    async def join(self) -> None:
        """Create this master's znode (rule 1) and watch the election (rule 2)."""
        from kazoo.recipe.watchers import ChildrenWatch

        await asyncio.to_thread(self._create)
        ChildrenWatch(self.client, self.path, self._on_children, allow_session_lost=True)

    def _create(self) -> None:
        self.znode = self.client.create(
            f"{self.path}/{ZNODE_PREFIX}", self.info, ephemeral=True, sequence=True, makepath=True
        )
        log.info("election_joined", znode=self.znode, zookeeper=self.hosts)

    # --- kazoo's threads --------------------------------------------------------------------

    def _on_children(self, children: list[str]) -> bool:
        lowest = lowest_contender(children)
        leader: LeaderInfo | None = None
        mine = bool(self.znode) and lowest == self.znode.rsplit("/", 1)[1]
        if lowest is not None and not mine:
            try:
                data, _stat = self.client.get(f"{self.path}/{lowest}")
                leader = leader_info(data)
            except Exception as exc:  # gone meanwhile, or not a MasterInfo: the next event
                log.info("leader_unreadable", znode=lowest, error=repr(exc))
        self._post(self._elect if mine else self._follow, leader)
        return True

    def _on_state(self, state: str) -> None:
        from kazoo.protocol.states import KazooState

        if self._closing:
            return  # our own close() ends the session: no loss to report
        if state == KazooState.SUSPENDED:
            self._post(self._suspended)
        elif state == KazooState.LOST:
            self._post(self._session_lost)

    def _post(self, fn: Any, *args: Any) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(fn, *args)

    # --- the loop -----------------------------------------------------------------------

    def _elect(self, _leader: LeaderInfo | None) -> None:
        if self.lost.is_set() or self.leading:
            return
        self.leading = True
        self.elected.set()

    def _follow(self, leader: LeaderInfo | None) -> None:
        if self.leading:
            # Our znode is no longer the lowest: it went with our session. Rule 3 already
            # stopped us when the connection was lost; this is the belt to its braces.
            self._lose("this master's election znode is no longer the lowest")
            return
        if leader != self.leader:
            log.info("leader_is", leader=leader.grpc if leader else None)
        self.leader = leader

    def _suspended(self) -> None:
        if self.leading:
            self._lose("the ZooKeeper connection was lost (SUSPENDED)")
        else:
            self.leader = None  # not known until the session is back

    def _session_lost(self) -> None:
        if self.leading or self.elected.is_set():
            self._lose("the ZooKeeper session expired (LOST)")
        elif not self._rejoining:
            self._rejoining = True
            asyncio.get_running_loop().create_task(self._rejoin())

    async def _rejoin(self) -> None:
        """A standby whose session expired: its znode went with it; join with a new one."""
        try:
            await asyncio.to_thread(self.client.retry, self._create)
        except Exception as exc:  # ZooKeeper still away: the next LOST tries again
            log.warning("election_rejoin_failed", error=repr(exc))
        finally:
            self._rejoining = False

    def _lose(self, reason: str) -> None:
        if self.lost.is_set():
            return
        self.lost_reason = reason
        self.leading = False
        log.error("leadership_lost", reason=reason, znode=self.znode)
        for callback in self.on_lost:
            callback()
        self.lost.set()

    async def close(self) -> None:
        self._closing = True
        if self.client is not None:
            await asyncio.to_thread(self._close_client)

    def _close_client(self) -> None:
        client, self.client = self.client, None
        if client is not None:
            client.stop()
            client.close()
