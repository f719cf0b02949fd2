"""Can this process listen on an address? Asked before a server binds it, so a taken port is
Corral's one line, not gRPC's own log line first (gRPC's C core writes to stderr itself when
``add_insecure_port`` fails, before Python sees the error)."""

from __future__ import annotations

import errno
import socket


def cannot_listen(address: str) -> str | None:
    """Why ``HOST:PORT`` cannot be listened on now, or None if it can (or port 0, any free
    one). Sockets are bound as servers bind them (SO_REUSEADDR, so a port in TIME_WAIT is free)
    and closed at once; like gRPC, an address that resolves to several is usable when any one
    of them is. A name that does not resolve is left to the server to report."""
    host, _, port_text = address.rpartition(":")
    port = int(port_text)
    if port == 0:
        return None
    try:
        candidates = socket.getaddrinfo(
            host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except (socket.gaierror, UnicodeError):
        return None
    reasons: list[OSError] = []
    for family, kind, proto, _, sockaddr in candidates:
        with socket.socket(family, kind, proto) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(sockaddr)
            except OSError as exc:
                reasons.append(exc)
                continue
        return None
    if not reasons:
        return None
    first = reasons[0]
    if first.errno == errno.EADDRINUSE:
        return "the port is taken (another master, or another program, listens on it)"
    return first.strerror or str(first)
