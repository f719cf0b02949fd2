"""Finding the leading master: a static list of masters, or ZooKeeper (Mesos' layout).

Who uses it: the SDK's Driver, the agent, and every client command; they take a *master spec*:

- ``HOST:PORT`` or ``HOST:PORT,HOST:PORT,...``: the masters to try, in turn. A standby answers
  every call with ``UNAVAILABLE`` and the leader's address in the ``corral-leader`` trailing
  metadata (``leader_hint``), so the next try goes to the leader.
- ``zk://HOST:PORT[,HOST:PORT...]/PATH``: ZooKeeper says who leads. Each master holds an
  ephemeral sequential znode ``PATH/json.info_NNNNNNNNNN`` whose data is its MasterInfo as JSON
  (Mesos' layout: Mesos-era tools read it too); the lowest sequence leads. kazoo is imported only
  when such a spec is used (``zk_detector``), so the SDK needs it only then (the ``ha`` extra).

A detector never decides for its user when to give up: callers back off with jitter between
tries and follow ``changed`` to drop a stream to a master that no longer leads.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import socket
from dataclasses import dataclass
from typing import Any, Final, Protocol

LEADER_METADATA: Final = "corral-leader"  # trailing metadata of a standby's refusal
ZNODE_PREFIX: Final = "json.info_"  # Mesos' name for a contender's znode
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


def check_host_port(text: str, what: str = "address") -> str:
    """``HOST:PORT`` (an IPv6 host in brackets), or ValueError naming what is wrong."""
    host, sep, port = text.strip().rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) <= 65535:
        raise ValueError(f"{what} {text!r} is not HOST:PORT")
    return text.strip()


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


# --- MasterInfo as JSON (what a contender's znode holds) -----------------------------------


def master_info_json(
    master_id: str,
    grpc_address: str,
    http_address: str,
    hostname: str,
    version: str,
    mesos_address: str = "",
) -> bytes:
    """The znode data of a master at ``grpc_address``: Mesos' MasterInfo fields (``id``,
    ``hostname``, ``version``, ``address``, ``pid``, ``port``, and ``ip`` when it is an IPv4
    address), and Corral's own addresses under ``corral``. With ``mesos_address`` (``corral
    master --mesos-api``) Mesos' fields name that address, the one Mesos clients (pymesos given
    ``zk://``) dial; Corral's clients read ``corral``."""
    host, _, port = (mesos_address or grpc_address).rpartition(":")
    host = host.strip("[]")
    ip = _resolve(host)
    info: dict[str, Any] = {
        "id": master_id,
        "hostname": hostname,
        "version": version,
        "port": int(port),
        "pid": f"master@{ip}:{port}",
        "address": {"ip": ip, "port": int(port), "hostname": hostname},
        "corral": {"grpc": grpc_address, "http": http_address},
    }
    if mesos_address:
        info["corral"]["mesos"] = mesos_address
    with contextlib.suppress(ValueError):
        packed = ipaddress.IPv4Address(ip).packed
        info["ip"] = int.from_bytes(packed, "little")  # Mesos: network order read as uint32
    return json.dumps(info, sort_keys=True).encode()


def _resolve(host: str) -> str:
    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        pass
    try:
        return socket.gethostbyname(host)
    except OSError:
        return host


@dataclass(frozen=True, slots=True)
class LeaderInfo:
    """What a contender's znode says: the master's id and where to reach it."""

    master_id: str
    grpc: str
    http: str
    mesos: str = ""  # its Mesos API (--mesos-api), "" if none


def leader_info(data: bytes) -> LeaderInfo:
    """Read a contender's MasterInfo JSON; ValueError if it is not one. A Mesos master's
    (no ``corral`` part) gives its ``address`` for gRPC and nothing for HTTP."""
    try:
        info = json.loads(data)
        corral = info.get("corral") or {}
        grpc_address = corral.get("grpc") or _address_of(info["address"])
        return LeaderInfo(
            master_id=str(info.get("id", "")),
            grpc=check_host_port(str(grpc_address)),
            http=str(corral.get("http", "")),
            mesos=str(corral.get("mesos", "")),
        )
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"not a MasterInfo JSON: {exc}") from None


def _address_of(address: dict[str, Any]) -> str:
    host = address.get("hostname") or address["ip"]
    return f"{host}:{int(address['port'])}"


def sequence_of(name: str) -> int | None:
    """The sequence number of a contender's znode name, None if the name is not one."""
    if not name.startswith(ZNODE_PREFIX):
        return None
    digits = name[len(ZNODE_PREFIX) :]
    return int(digits) if digits.isdigit() else None


def lowest_contender(children: list[str]) -> str | None:
    """The leading contender among ``PATH``'s children: the lowest sequence (others ignored)."""
    numbered = [(seq, name) for name in children if (seq := sequence_of(name)) is not None]
    return min(numbered)[1] if numbered else None


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
        self._moved = asyncio.Event()

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
        if self._hint and self._hint != current:
            return
        await self._moved.wait()

    async def close(self) -> None:
        self._moved.set()


def make_detector(spec: MasterSpec, session_timeout: float = 10.0) -> MasterDetector:
    """The detector for ``spec``: ZooKeeper's needs kazoo (the ``ha`` extra)."""
    if spec.is_zk:
        from corral.frameworks.sdk.zk_detector import ZooKeeperDetector

        return ZooKeeperDetector(spec.zk_hosts, spec.zk_path, session_timeout)
    return StaticDetector(spec.addresses)


def leader_hint(error: Any) -> str:
    """The leader's address in a standby's refusal (a ``grpc.RpcError``), or ""."""
    try:
        metadata = error.trailing_metadata() or ()
    except Exception:  # not a call error, or no metadata: no hint
        return ""
    for key, value in metadata:
        if key == LEADER_METADATA:
            return value.decode() if isinstance(value, bytes) else str(value)
    return ""
