"""Leader election and fencing in ZooKeeper, for every process that must act alone: masters
(``corral master --zk``) and services (``corral serving serve --zk``).

Election (Mesos' layout, as ``detector.py`` reads it):
1. Each contender holds one ephemeral sequential znode ``PATH/json.info_NNNNNNNNNN`` whose data
   says where to reach it; nothing else is created under ``PATH``. The lowest sequence leads.
2. Every change of ``PATH``'s children is read again whole (a ChildrenWatch): a contender learns
   it leads when its znode becomes the lowest, and a standby learns who leads.
3. The moment the session is SUSPENDED (the connection to ZooKeeper is lost) a leader is told
   ``lost``: it stops acting at once, before its session can expire and another be elected,
   and its process ends so that it comes back as a fresh contender. A standby only forgets who
   leads; when its session is LOST it joins again with a new znode.

Fencing (``Fence``), for the leader's writes to a store in ZooKeeper under ``ROOT``:
4. ``fence()`` makes the leader the store's writer: one transaction checks that its election
   znode still exists and moves ``ROOT/epoch`` up by one from the version read. The new number
   is the leader's epoch.
5. Every write is one transaction that first checks ``epoch`` is still at the version this
   leader left it and that its election znode exists (``transaction()`` adds both checks,
   ``commit()`` reads them). A leader that lost its leadership (its znode went with its
   session) or was superseded (a newer leader fenced) writes nothing: ``FencedOut``.

kazoo is imported inside the functions (``pip install 'corral[ha]'``); it calls back from its
own threads, and everything reaches the asyncio loop through ``call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from corral.leader_record import ZNODE_PREFIX, LeaderInfo, leader_info, lowest_contender
from corral.logging import uncached_logger as get_logger
from corral.zk_detector import NEEDS_KAZOO

log = get_logger("corral.election")


class ZooKeeperUnreachable(OSError):
    """ZooKeeper did not answer in time when the contender started."""


class FencedOut(Exception):
    """This leader may not write: it no longer leads, or (``superseded``) a newer leader fenced
    the store."""

    def __init__(self, message: str, superseded: bool = False) -> None:
        super().__init__(message)
        self.superseded = superseded


class Contender:
    """One contender at ``hosts``/``path``; ``info`` is its znode's data, read by others with
    ``parse`` (default: a master's MasterInfo JSON)."""

    def __init__(
        self,
        hosts: str,
        path: str,
        session_timeout: float,
        info: bytes,
        parse: Callable[[bytes], Any] = leader_info,
    ) -> None:
        self.hosts = hosts
        self.path = path
        self.session_timeout = session_timeout
        self.info = info
        self.parse = parse
        self.znode = ""
        self.client: Any = None
        self.leader: Any = None  # who leads, as ``parse`` read it (None: unknown, or us)
        self.leading = False
        self.elected = asyncio.Event()
        self.lost = asyncio.Event()
        self.lost_reason = ""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._rejoining = False
        # Called on the loop the moment leadership is lost, before anything else runs there.
        self.on_lost: list[Callable[[], None]] = []
        self._closing = False

    async def connect(self, timeout: float) -> None:
        """Open the session (raises ZooKeeperUnreachable after ``timeout``)."""
        try:
            from kazoo.client import KazooClient
        except ImportError:
            raise ImportError(NEEDS_KAZOO) from None

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
        """Create this contender's znode (rule 1) and watch the election (rule 2)."""
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
        leader: Any = None
        mine = bool(self.znode) and lowest == self.znode.rsplit("/", 1)[1]
        if lowest is not None and not mine:
            try:
                data, _stat = self.client.get(f"{self.path}/{lowest}")
                leader = self.parse(data)
            except Exception as exc:  # gone meanwhile, or not readable: the next event
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

    def _elect(self, _leader: Any) -> None:
        if self.lost.is_set() or self.leading:
            return
        self.leading = True
        self.leader = None
        self.elected.set()

    def _follow(self, leader: Any) -> None:
        if self.leading:
            # Our znode is no longer the lowest: it went with our session. Rule 3 already
            # stopped us when the connection was lost; this is the belt to its braces.
            self._lose("this contender's election znode is no longer the lowest")
            return
        if leader != self.leader:
            log.info("leader_is", leader=_describe(leader))
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


def _describe(leader: Any) -> Any:
    return leader.grpc if isinstance(leader, LeaderInfo) else leader


class Fence:
    """Rules 4 and 5 for a store under ``root``, written by the contender whose election znode
    is ``leader_znode``, through ``client`` (the contender's session). Blocking calls: run
    them in a thread, or accept a round trip to ZooKeeper on the loop."""

    def __init__(self, client: Any, root: str, leader_znode: str) -> None:
        self.client = client
        self.root = root.rstrip("/")
        self.leader_znode = leader_znode
        self.epoch = 0
        self.epoch_version = -1

    @property
    def epoch_path(self) -> str:
        return f"{self.root}/epoch"

    def fence(self) -> int:
        """Become the store's one writer (rule 4); the new epoch. Raises ``FencedOut`` (no
        longer the leader, or another moved the epoch at the same time) or kazoo's errors."""
        from kazoo.exceptions import NodeExistsError, NoNodeError

        self.client.ensure_path(self.root)
        with contextlib.suppress(NodeExistsError):
            self.client.create(self.epoch_path, b"0")
        data, stat = self.client.get(self.epoch_path)
        current = int(data.decode() or 0)
        txn = self.client.transaction()
        txn.check(self.leader_znode, -1)
        txn.set_data(self.epoch_path, str(current + 1).encode(), version=stat.version)
        results = txn.commit()
        if isinstance(results[0], NoNodeError):
            raise FencedOut(
                f"this leader's election znode {self.leader_znode} is gone (its session "
                "expired): it does not lead"
            )
        if isinstance(results[1], Exception):
            raise FencedOut(
                f"another leader moved {self.epoch_path} past {current} at the same time "
                f"({results[1]!r})",
                superseded=True,
            )
        self.epoch = current + 1
        self.epoch_version = results[1].version
        return self.epoch

    def transaction(self) -> Any:
        """A kazoo transaction that begins with rule 5's two checks."""
        if self.epoch_version < 0:
            raise FencedOut(f"the store {self.root} was not fenced: this process is no leader")
        txn = self.client.transaction()
        txn.check(self.epoch_path, self.epoch_version)
        txn.check(self.leader_znode, -1)
        return txn

    def commit(self, txn: Any) -> list[Any]:
        """Commit ``txn`` (from ``transaction()``); the results of the operations added after
        the checks. ``FencedOut`` when a check failed (nothing was written); kazoo's errors
        when ZooKeeper could not be asked."""
        from kazoo.exceptions import BadVersionError, NoNodeError

        results = txn.commit()
        if isinstance(results[0], BadVersionError | NoNodeError):
            raise FencedOut(
                f"fenced: another leader writes {self.root} now (it is past epoch {self.epoch})",
                superseded=True,
            )
        if isinstance(results[1], NoNodeError):
            raise FencedOut(
                f"fenced: this leader's election znode {self.leader_znode} is gone (its "
                "ZooKeeper session expired): it no longer leads"
            )
        return list(results[2:])
