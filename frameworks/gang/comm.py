"""Collective communication for the default worker: an allreduce through rank 0 over TCP.

Rank 0 listens on MASTER_PORT; every other rank connects to MASTER_ADDR:MASTER_PORT and says
its rank. An allreduce is each rank sending its array to rank 0, which adds them up and sends
the sum back to every rank (a star, not a ring: a gang of a few workers does not need better).

Every wait is bounded by ``timeout``: a peer that died (its socket closes) or hangs (nothing
arrives in time) raises ``PeerLost`` naming it, so the rest of the gang ends instead of waiting
forever, and the framework restarts the gang.
"""

from __future__ import annotations

import socket
import struct
import time

import numpy as np

from corral.frameworks.gang.train import Array

_HEADER = struct.Struct("!Q")
_MAX_BYTES = 1 << 26  # far above any array this worker sends: a corrupt header, not data


class PeerLost(Exception):
    """A peer died, hung or sent garbage: this worker cannot go on."""


def _recv_exactly(sock: socket.socket, n: int, who: str, timeout: float) -> bytes:
    chunks: list[bytes] = []
    left = n
    while left:
        try:
            chunk = sock.recv(min(left, 1 << 20))
        except TimeoutError:
            raise PeerLost(f"no message from {who} within {timeout:g} s") from None
        except OSError as err:
            raise PeerLost(f"lost the connection to {who}: {err}") from None
        if not chunk:
            raise PeerLost(f"{who} closed the connection (did it die?)")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def send_array(sock: socket.socket, a: Array, who: str) -> None:
    payload = np.ascontiguousarray(a, dtype=np.float64).tobytes()
    try:
        sock.sendall(_HEADER.pack(len(payload)) + payload)
    except OSError as err:
        raise PeerLost(f"cannot send to {who}: {err}") from None


def recv_array(sock: socket.socket, who: str, timeout: float) -> Array:
    (size,) = _HEADER.unpack(_recv_exactly(sock, _HEADER.size, who, timeout))
    if size > _MAX_BYTES or size % 8:
        raise PeerLost(f"{who} sent a malformed message ({size} bytes)")
    return np.frombuffer(_recv_exactly(sock, size, who, timeout), dtype=np.float64).copy()


class Group:
    """This rank's connections: rank 0 holds one per peer, the others one to rank 0."""

    def __init__(self, rank: int, world: int, peers: dict[int, socket.socket], timeout: float):
        self.rank, self.world, self.peers, self.timeout = rank, world, peers, timeout

    @classmethod
    def connect(cls, rank: int, world: int, addr: str, port: int, timeout: float) -> Group:
        """Form the group, or ``PeerLost`` if it is not whole within ``timeout`` seconds."""
        if not 0 <= rank < world:
            raise ValueError(f"RANK {rank} is not in 0..{world - 1}")
        if world == 1:
            return cls(rank, world, {}, timeout)
        deadline = time.monotonic() + timeout
        if rank == 0:
            return cls(rank, world, _accept_peers(world, port, deadline, timeout), timeout)
        sock = _connect_to_rank0(addr, port, deadline, timeout)
        try:
            send_array(sock, np.array([rank], dtype=np.float64), "rank 0")
        except BaseException:
            sock.close()
            raise
        return cls(rank, world, {0: sock}, timeout)

    def broadcast(self, a: Array | None) -> Array:
        """Rank 0's ``a``, on every rank (the others pass None)."""
        if self.rank != 0:
            return recv_array(self.peers[0], "rank 0", self.timeout)
        assert a is not None
        for r, sock in self.peers.items():
            send_array(sock, a, f"rank {r}")
        return a

    def allreduce_sum(self, a: Array) -> Array:
        """The element-wise sum of every rank's ``a``, on every rank."""
        if self.rank != 0:
            send_array(self.peers[0], a, "rank 0")
            return recv_array(self.peers[0], "rank 0", self.timeout)
        total = a.astype(np.float64, copy=True)
        for r, sock in self.peers.items():
            got = recv_array(sock, f"rank {r}", self.timeout)
            if got.shape != total.shape:
                raise PeerLost(f"rank {r} sent {got.shape[0]} values, expected {total.shape[0]}")
            total += got
        return self.broadcast(total)

    def close(self) -> None:
        for sock in self.peers.values():
            sock.close()
        self.peers = {}


def _accept_peers(
    world: int, port: int, deadline: float, timeout: float
) -> dict[int, socket.socket]:
    peers: dict[int, socket.socket] = {}
    # All interfaces: peers reach rank 0 by its agent's hostname, whatever address that is.
    with socket.create_server(("", port)) as server:
        try:
            while len(peers) < world - 1:
                server.settimeout(max(0.0, deadline - time.monotonic()))
                try:
                    sock, _ = server.accept()
                except TimeoutError:
                    missing = sorted(set(range(1, world)) - set(peers))
                    raise PeerLost(
                        f"ranks {missing} did not connect within {timeout:g} s"
                    ) from None
                sock.settimeout(timeout)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                hello = recv_array(sock, "a connecting peer", timeout)
                r = int(hello[0]) if hello.shape == (1,) else -1
                if not 0 < r < world or r in peers:
                    sock.close()
                    raise PeerLost(f"a peer said it is rank {r}: not a rank this gang lacks")
                peers[r] = sock
        except BaseException:
            for s in peers.values():
                s.close()
            raise
    return peers


def _connect_to_rank0(addr: str, port: int, deadline: float, timeout: float) -> socket.socket:
    last = ""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise PeerLost(f"cannot reach rank 0 at {addr}:{port} within {timeout:g} s ({last})")
        try:
            sock = socket.create_connection((addr, port), timeout=left)
        except OSError as err:
            # Rank 0 may not be listening yet (members start in any order): try again shortly.
            last = str(err)
            time.sleep(min(0.05, max(0.0, left)))
            continue
        sock.settimeout(timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock
