"""One blocking Operator call for the CLI, made to the leading master, with the master's
failures as one-line CliErrors.

``master`` is a master spec (corral.frameworks.sdk.detector): one address, a list, or a zk://
URL. A list is tried in turn; a standby's refusal names the leader, which is tried next; a
master that does not answer is passed over. ZooKeeper is asked once who leads.
"""

from __future__ import annotations

import time
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
    deadline = time.monotonic() + timeout
    tls = credentials()
    queue = candidates(master, timeout)
    # One master: wait for it as before. Several: a dead one must fail fast to try the next.
    wait = len(queue) == 1
    last = ""
    hint = ""
    tried = 0
    while True:
        if hint:
            address, hint = hint, ""
        else:
            if tried and tried % len(queue) == 0:
                time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))  # a round failed
            address = queue[tried % len(queue)]
            tried += 1
        left = deadline - time.monotonic()
        if left <= 0:
            raise CliError(last or f"no answer from the master at {master} within {timeout:g}s")
        with sdk_tls.channel(address, tls, OPTIONS) as channel:
            stub = operator_pb2_grpc.OperatorStub(channel)  # type: ignore[no-untyped-call]
            try:
                answer = getattr(stub, method)(
                    request, timeout=left, wait_for_ready=wait, metadata=metadata or None
                )
                return answer, address
            except grpc.RpcError as exc:
                code = exc.code() if hasattr(exc, "code") else None
                detail = exc.details() if hasattr(exc, "details") else str(exc)
                if code == grpc.StatusCode.DEADLINE_EXCEEDED:
                    why = _connection_error(stub, method, request)
                    raise CliError(
                        f"no answer from the master at {master} within {timeout:g}s{why}"
                    ) from None
                if code != grpc.StatusCode.UNAVAILABLE:
                    raise CliError(f"master at {address}: {detail}") from None
                if _handshake_failed(detail):
                    last = f"master at {address}: the TLS handshake failed ({detail}); {_HINT}"
                    hint = ""
                    continue
                last = f"master at {address}: {detail}"
                hint = leader_hint(exc)


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
        getattr(stub, method)(request, timeout=1.0, wait_for_ready=False)
    except grpc.RpcError as exc:
        detail = exc.details() if hasattr(exc, "details") else ""
        if detail and exc.code() == grpc.StatusCode.UNAVAILABLE:
            return f" ({detail}; if the master is up: {_HINT})"
    except Exception:  # the probe is best effort: the caller's error stands without it
        pass
    return ""
