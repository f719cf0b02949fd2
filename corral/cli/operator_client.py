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

from corral.cli.errors import CliError
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
        with grpc.insecure_channel(address, options=OPTIONS) as channel:
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
                    raise CliError(
                        f"no answer from the master at {master} within {timeout:g}s"
                    ) from None
                if code != grpc.StatusCode.UNAVAILABLE:
                    raise CliError(f"master at {address}: {detail}") from None
                last = f"master at {address}: {detail}"
                hint = leader_hint(exc)
