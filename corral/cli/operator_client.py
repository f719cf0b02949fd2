"""One blocking Operator call for the CLI, made to the leading master, with the master's
failures as one-line CliErrors.

``master`` is a master spec (corral.frameworks.sdk.detector): one address, a list, or a zk://
URL. A list is tried in turn; a standby's refusal names the leader, which is tried next; a
master that does not answer is passed over. ZooKeeper is asked once who leads. A streaming
call (``stream_leader``) finds the leader the same way, with the stream itself: a command makes
no call its principal does not need (issue #40, defect 4: `corral logs` asked for the priority
classes first, to learn the leader's address, and a framework principal may not).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import grpc

from corral.cli.client_tls import credentials
from corral.cli.errors import CliError
from corral.frameworks.sdk import tls as sdk_tls
from corral.frameworks.sdk.detector import leader_hint, parse_master
from corral.limits import MAX_MESSAGE_BYTES
from corral.v1 import operator_pb2_grpc

# The master's state can be larger than gRPC's 4 MB default: take what the master may send.
OPTIONS = [("grpc.max_receive_message_length", MAX_MESSAGE_BYTES)]


Metadata = tuple[tuple[str, str], ...]
OPERATOR_METADATA = "corral-operator"  # master/security/requester.py reads it


def operator_metadata(name: str) -> Metadata:
    """The metadata declaring who asks for an operator's action (empty: nobody named)."""
    return ((OPERATOR_METADATA, name),) if name else ()


def call_operator(
    master: str, method: str, request: Any, timeout: float, metadata: Metadata = ()
) -> Any:
    """``Operator.<method>(request)`` on the leading master; waits up to ``timeout``."""
    return call_leader(master, method, request, timeout, metadata)[0]


def candidates(master: str, timeout: float) -> list[str]:
    """The masters to try first: the spec's list, or the leader ZooKeeper names."""
    try:
        spec = parse_master(master)
    except ValueError as exc:
        raise CliError(str(exc), exit_code=2) from None
    if not spec.is_zk:
        return list(spec.addresses)
    from corral.frameworks.sdk.zk_detector import find_leader

    try:
        leader = find_leader(spec.zk_hosts, spec.zk_path, timeout)
    except (TimeoutError, ImportError) as exc:
        raise CliError(str(exc)) from None
    if leader is None:
        raise CliError(f"no master is registered in ZooKeeper at {master}")
    return [leader.grpc]


def call_leader(
    master: str, method: str, request: Any, timeout: float, metadata: Metadata = ()
) -> tuple[Any, str]:
    """The answer of the leading master, and its address.

    A master that cannot be reached for a reason waiting will not change fails the call at
    once (``unreachable_reason``): nothing listens at its address (connection refused), or this
    client cannot speak its TLS. Any other failure is tried again until ``timeout`` (a master
    starting, a standby naming the leader). With several masters each is tried in turn, and
    the call fails at once only when every one of them cannot be reached so."""
    leaders = _Leaders(master, timeout)
    while True:
        address, left = leaders.next()
        with sdk_tls.channel(address, leaders.tls, OPTIONS) as channel:
            stub = operator_pb2_grpc.OperatorStub(channel)  # type: ignore[no-untyped-call]
            try:
                answer = getattr(stub, method)(
                    request, timeout=left, wait_for_ready=False, metadata=metadata or None
                )
                return answer, address
            except grpc.RpcError as exc:
                leaders.failed(exc, address)


def stream_leader(
    master: str, method: str, request: Any, timeout: float, stream_timeout: float | None = None
) -> Iterator[tuple[Any, str]]:
    """``Operator.<method>(request)``'s stream from the leading master: (message, its address)
    for each message. The masters are tried as ``call_leader`` tries them, within ``timeout``,
    until one answers the stream (a standby refuses it at once, naming the leader): no other
    call is made to find the leader, so a principal needs no grant beyond ``method`` (a
    framework reading its own task's files, ``corral logs``, needs none). Once the stream's
    first message came, the stream is the leader's: a failure then is a CliError naming it.
    ``stream_timeout``: the whole stream's deadline (None: as long as it goes on)."""
    leaders = _Leaders(master, timeout)
    while True:
        address, _left = leaders.next()
        with sdk_tls.channel(address, leaders.tls, OPTIONS) as channel:
            stub = operator_pb2_grpc.OperatorStub(channel)  # type: ignore[no-untyped-call]
            started = False
            try:
                for message in getattr(stub, method)(
                    request, timeout=stream_timeout, wait_for_ready=False
                ):
                    started = True
                    yield message, address
                return
            except grpc.RpcError as exc:
                if started:
                    detail = exc.details() if hasattr(exc, "details") else str(exc)
                    raise CliError(f"master at {address}: {detail}") from None
                leaders.failed(exc, address)


class _Leaders:
    """Which master to try next, within ``timeout``: the spec's list in turn (or the leader
    ZooKeeper names), a standby's refusal naming the leader first; a master that does not
    answer is passed over. ``failed`` turns a refusal that is the answer into a CliError, and
    fails at once when every master is unreachable for a reason waiting will not change."""

    def __init__(self, master: str, timeout: float) -> None:
        self.master = master
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout
        self.tls = credentials()
        self.queue = candidates(master, timeout)
        self.last = ""
        self.hint = ""
        self.tried = 0
        self.unreachable: dict[str, str] = {}

    def next(self) -> tuple[str, float]:
        """(address, seconds left); CliError once out of time."""
        if self.hint:
            address, self.hint = self.hint, ""
        else:
            if self.tried and self.tried % len(self.queue) == 0:
                # A round failed: a moment before the next.
                time.sleep(min(0.2, max(0.0, self.deadline - time.monotonic())))
            address = self.queue[self.tried % len(self.queue)]
            self.tried += 1
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise CliError(
                self.last or f"no answer from the master at {self.master} within {self.timeout:g}s"
            )
        return address, left

    def failed(self, exc: grpc.RpcError, address: str) -> None:
        """A call to ``address`` failed: a CliError if that is the answer, else note why and
        where to go next."""
        code = exc.code() if hasattr(exc, "code") else None
        detail = exc.details() if hasattr(exc, "details") else str(exc)
        if code == grpc.StatusCode.DEADLINE_EXCEEDED:
            raise CliError(
                f"no answer from the master at {address} within {self.timeout:g}s"
            ) from None
        if code != grpc.StatusCode.UNAVAILABLE:
            raise CliError(f"master at {address}: {detail}") from None
        why = unreachable_reason(address, detail, self.tls)
        if why:
            self.unreachable[address] = why
            if set(self.queue) <= set(self.unreachable):
                raise CliError("; ".join(self.unreachable[a] for a in self.queue)) from None
            self.last = why
            return
        self.unreachable.pop(address, None)
        self.last = f"master at {address}: {detail}"
        self.hint = leader_hint(exc)


_HINT = (
    "is this client's CA the master's, and its certificate signed by it? (--tls-dir; "
    "--insecure only for a master started with --insecure)"
)


def _handshake_failed(detail: str) -> bool:
    text = detail.lower()
    return "handshake" in text or "ssl" in text or "certificate" in text


def unreachable_reason(address: str, detail: str, tls: sdk_tls.Credentials) -> str:
    """Why ``address`` cannot answer, when waiting will not change it ("": try again): nothing
    listens there, or this client cannot speak the master's TLS. The TLS hint is given only
    for a TLS failure, never for a master that is simply not there."""
    text = detail.lower()
    if "connection refused" in text:
        return (
            f"nothing listens at {address} (connection refused): is the master running, and is "
            "this its gRPC address (corral master --grpc)?"
        )
    if "wrong_version_number" in text:  # it answered the handshake in plain text
        return (
            f"master at {address}: the TLS handshake failed: it speaks plain text (a master "
            "started with --insecure); pass --insecure to talk to it"
        )
    if _handshake_failed(detail):
        return f"master at {address}: the TLS handshake failed ({detail}); {_HINT}"
    if isinstance(tls, sdk_tls.Insecure) and "socket closed" in text:
        # A master speaking TLS closes a plain-text connection without a word.
        return (
            f"master at {address} closed the connection ({detail}): a master started without "
            "--insecure speaks only TLS; drop --insecure (this client's) and pass --tls-dir"
        )
    return ""
