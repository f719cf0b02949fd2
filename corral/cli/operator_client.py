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
OPERATOR_METADATA = "corral-operator"  # master/requester.py reads it


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
    """The answer of the leading master, and its address."""
    leaders = _Leaders(master, timeout)
    while True:
        address, left, wait = leaders.next()
        with sdk_tls.channel(address, leaders.tls, OPTIONS) as channel:
            stub = operator_pb2_grpc.OperatorStub(channel)  # type: ignore[no-untyped-call]
            try:
                answer = getattr(stub, method)(
                    request, timeout=left, wait_for_ready=wait, metadata=metadata or None
                )
                return answer, address
            except grpc.RpcError as exc:
                leaders.failed(exc, address, stub, method, request)


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
        address, left, wait = leaders.next()
        with sdk_tls.channel(address, leaders.tls, OPTIONS) as channel:
            stub = operator_pb2_grpc.OperatorStub(channel)  # type: ignore[no-untyped-call]
            if wait:
                # One master: wait for it to answer the connection as a call would, but not
                # for the stream's whole deadline (a followed file's is None).
                try:
                    grpc.channel_ready_future(channel).result(timeout=left)
                except grpc.FutureTimeoutError:
                    why = _connection_error(stub, method, request)
                    raise CliError(
                        f"no answer from the master at {master} within {timeout:g}s{why}"
                    ) from None
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
                leaders.failed(exc, address, stub, method, request)


class _Leaders:
    """Which master to try next, within ``timeout``: the spec's list in turn (or the leader
    ZooKeeper names), a standby's refusal naming the leader first; a master that does not
    answer is passed over. ``failed`` turns a refusal that is the answer into a CliError."""

    def __init__(self, master: str, timeout: float) -> None:
        self.master = master
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout
        self.tls = credentials()
        self.queue = candidates(master, timeout)
        # One master: wait for it as before. Several: a dead one must fail fast to try the next.
        self.wait = len(self.queue) == 1
        self.last = ""
        self.hint = ""
        self.tried = 0

    def next(self) -> tuple[str, float, bool]:
        """(address, seconds left, wait for it to be ready); CliError once out of time."""
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
        return address, left, self.wait

    def failed(
        self, exc: grpc.RpcError, address: str, stub: Any, method: str, request: Any
    ) -> None:
        """A call to ``address`` failed: a CliError if that is the answer, else note why and
        where to go next."""
        code = exc.code() if hasattr(exc, "code") else None
        detail = exc.details() if hasattr(exc, "details") else str(exc)
        if code == grpc.StatusCode.DEADLINE_EXCEEDED:
            why = _connection_error(stub, method, request)
            raise CliError(
                f"no answer from the master at {self.master} within {self.timeout:g}s{why}"
            ) from None
        if code != grpc.StatusCode.UNAVAILABLE:
            raise CliError(f"master at {address}: {detail}") from None
        if _handshake_failed(detail):
            self.last = f"master at {address}: the TLS handshake failed ({detail}); {_HINT}"
            self.hint = ""
            return
        self.last = f"master at {address}: {detail}"
        self.hint = leader_hint(exc)


_HINT = (
    "is this client's CA the master's, and its certificate signed by it? (--tls-dir; "
    "--insecure only for a master started with --insecure)"
)


def _handshake_failed(detail: str) -> bool:
    text = detail.lower()
    return "handshake" in text or "ssl" in text or "certificate" in text


def _connection_error(stub: Any, method: str, request: Any) -> str:
    """Why a call that waited for the master got no answer, when the channel knows: a master
    that is down, or one whose TLS this client cannot speak (a plain-text client, a wrong CA),
    look alike from outside ("Socket closed", "handshake failed")."""
    try:
        answer = getattr(stub, method)(request, timeout=1.0, wait_for_ready=False)
        if isinstance(answer, Iterator):
            next(answer, None)  # a stream fails at its first message
    except grpc.RpcError as exc:
        detail = exc.details() if hasattr(exc, "details") else ""
        if detail and exc.code() == grpc.StatusCode.UNAVAILABLE:
            return f" ({detail}; if the master is up: {_HINT})"
    except Exception:  # the probe is best effort: the caller's error stands without it
        pass
    return ""
