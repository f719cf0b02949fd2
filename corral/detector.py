"""Finding the leading master: a static list of masters, or ZooKeeper (Mesos' layout).

Who uses it: the SDK's Driver, the agent, and every client command; they take a *master spec*:

- ``HOST:PORT`` or ``HOST:PORT,HOST:PORT,...``: the masters to try, in turn. A standby answers
  every call with ``UNAVAILABLE`` and the leader's address in the ``corral-leader`` trailing
  metadata (``leader_hint``), so the next try goes to the leader.
- ``zk://HOST:PORT[,HOST:PORT...]/PATH``: ZooKeeper says who leads. Each master holds an
  ephemeral sequential znode ``PATH/json.info_NNNNNNNNNN`` whose data is its MasterInfo as JSON
  (Mesos' layout: Mesos-era tools read it too); the lowest sequence leads. kazoo is imported only
  when such a spec is used (``zk_detector``), so the SDK needs it only then (the ``ha`` extra).
The record itself (a contender's znode data, the standby's redirect) is ``leader_record``'s.

A detector never decides for its user when to give up: callers back off with jitter between
tries and follow ``changed`` to drop a stream to a master that no longer leads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Protocol

from corral.broadcast import Broadcast
from corral.leader_record import (
    LEADER_METADATA,
    ZNODE_PREFIX,
    LeaderInfo,
    check_host_port,
    leader_hint,
    leader_info,
    lowest_contender,
    master_info_json,
    sequence_of,
)

ZK_SCHEME: Final = "zk://"


@dataclass(frozen=True, slots=True)
class MasterSpec:
    """Where the masters are: ``addresses`` (static), or ZooKeeper's ``zk_hosts`` and
    ``zk_path``."""

    addresses: tuple[str, ...] = ()
    zk_hosts: str = ""
    zk_path: str = ""

    @property
    def is_zk(self) -> bool:
        return bool(self.zk_hosts)

    def __str__(self) -> str:
        if self.is_zk:
            return f"{ZK_SCHEME}{self.zk_hosts}{self.zk_path}"
        return ",".join(self.addresses)


def parse_zk_url(text: str) -> tuple[str, str]:
    """``zk://HOST:PORT[,HOST:PORT...]/PATH`` as (hosts, path); ValueError if malformed."""
    if not text.startswith(ZK_SCHEME):
        raise ValueError(f"{text!r} is not a ZooKeeper URL (zk://HOST:PORT[,HOST:PORT...]/PATH)")
    rest = text[len(ZK_SCHEME) :]
    hosts, slash, path = rest.partition("/")
    if not slash or not path.strip("/"):
        raise ValueError(f"{text!r} names no path (zk://HOST:PORT/PATH, e.g. zk://zk1:2181/corral)")
    for host in hosts.split(","):
        check_host_port(host, "ZooKeeper server")
    path = "/" + path.strip("/")
    if "//" in path or any(part in {".", ".."} for part in path.split("/")):
        raise ValueError(f"{text!r}: {path!r} is not a ZooKeeper path")
    return hosts, path


def parse_master(text: str) -> MasterSpec:
    """A master spec (see the module's docstring); ValueError with the reason if malformed."""
    text = text.strip()
    if text.startswith(ZK_SCHEME):
        hosts, path = parse_zk_url(text)
        return MasterSpec(zk_hosts=hosts, zk_path=path)
    parts = [p for p in text.split(",")]
    if not text or any(not p.strip() for p in parts):
        raise ValueError(f"{text!r} is not HOST:PORT[,HOST:PORT...] or zk://HOST:PORT/PATH")
    return MasterSpec(addresses=tuple(check_host_port(p, "master") for p in parts))


# --- detectors -----------------------------------------------------------------------------


class MasterDetector(Protocol):
    """Where the leader is, for a client that (re)connects."""

    async def leader(self) -> str:
        """The address to try next (waits until one is known)."""
        ...

    def redirected(self, address: str) -> None:
        """A master answered that ``address`` leads."""
        ...

    def failed(self, address: str) -> None:
        """``address`` did not answer, or answered without naming a leader."""
        ...

    async def changed(self, current: str) -> None:
        """Return when the leader is known to be another than ``current``."""
        ...

    async def close(self) -> None: ...


class StaticDetector:
    """A fixed list of masters, tried in turn; a standby's redirect is tried first."""

    def __init__(self, addresses: tuple[str, ...]) -> None:
        if not addresses:
            raise ValueError("a static detector needs at least one master")
        self.addresses = addresses
        self._next = 0
        self._hint = ""
        self._closed = False
        # Every agent of a simulated process waits here out its backoff: not an asyncio.Event,
        # whose waiters leave in O(waiters) each (corral/broadcast.py).
        self._moved = Broadcast()

    async def leader(self) -> str:
        return self._hint or self.addresses[self._next]

    def redirected(self, address: str) -> None:
        self._hint = address

    def failed(self, address: str) -> None:
        if address == self._hint:
            self._hint = ""
        elif address == self.addresses[self._next]:
            self._next = (self._next + 1) % len(self.addresses)

    async def changed(self, current: str) -> None:
        # A list cannot tell: a stream to a master that steps down is closed by that master.
        # Only a standby's redirect elsewhere is news.
        if self._closed or (self._hint and self._hint != current):
            return
        await self._moved.wait()

    async def close(self) -> None:
        self._closed = True
        self._moved.fire()


def make_detector(spec: MasterSpec, session_timeout: float = 10.0) -> MasterDetector:
    """The detector for ``spec``: ZooKeeper's needs kazoo (the ``ha`` extra)."""
    if spec.is_zk:
        from corral.zk_detector import ZooKeeperDetector

        return ZooKeeperDetector(spec.zk_hosts, spec.zk_path, session_timeout)
    return StaticDetector(spec.addresses)


__all__ = [
    "LEADER_METADATA",
    "ZK_SCHEME",
    "ZNODE_PREFIX",
    "LeaderInfo",
    "MasterDetector",
    "MasterSpec",
    "StaticDetector",
    "check_host_port",
    "leader_hint",
    "leader_info",
    "lowest_contender",
    "make_detector",
    "master_info_json",
    "parse_master",
    "parse_zk_url",
    "sequence_of",
]
