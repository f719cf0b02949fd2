"""The leader record: what a master that leads (or stands by) tells everyone else.

One format shared by the masters (which write it), the agents, the SDK and the CLI (which read
it), so it lives in the kernel:

- a contender's znode data under ``zk://HOSTS/PATH``: ``PATH/json.info_NNNNNNNNNN`` holds the
  master's MasterInfo as JSON (Mesos' layout, so Mesos-era tools read it too); the lowest
  sequence leads (``lowest_contender``);
- a standby's refusal: ``UNAVAILABLE`` with the leader's address in the ``corral-leader``
  trailing metadata (``LEADER_METADATA``, read back by ``leader_hint``).
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import socket
from dataclasses import dataclass
from typing import Any, Final

LEADER_METADATA: Final = "corral-leader"  # trailing metadata of a standby's refusal
ZNODE_PREFIX: Final = "json.info_"  # Mesos' name for a contender's znode


def check_host_port(text: str, what: str = "address") -> str:
    """``HOST:PORT`` (an IPv6 host in brackets), or ValueError naming what is wrong."""
    host, sep, port = text.strip().rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) <= 65535:
        raise ValueError(f"{what} {text!r} is not HOST:PORT")
    return text.strip()


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
