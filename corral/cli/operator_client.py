"""One blocking Operator call for the CLI, with the master's failures as one-line CliErrors."""

from __future__ import annotations

from typing import Any

import grpc

from corral.cli.errors import CliError
from corral.limits import MAX_MESSAGE_BYTES
from corral.v1 import operator_pb2_grpc


def call_operator(master: str, method: str, request: Any, timeout: float) -> Any:
    """``Operator.<method>(request)`` on ``master``; waits up to ``timeout`` for it to answer."""
    # The master's state can be larger than gRPC's 4 MB default: take what the master may send.
    options = [("grpc.max_receive_message_length", MAX_MESSAGE_BYTES)]
    with grpc.insecure_channel(master, options=options) as channel:
        stub = operator_pb2_grpc.OperatorStub(channel)  # type: ignore[no-untyped-call]
        try:
            return getattr(stub, method)(request, timeout=timeout, wait_for_ready=True)
        except grpc.RpcError as exc:
            code = exc.code() if hasattr(exc, "code") else None
            if code == grpc.StatusCode.DEADLINE_EXCEEDED:
                raise CliError(
                    f"no answer from the master at {master} within {timeout:g}s"
                ) from None
            detail = exc.details() if hasattr(exc, "details") else str(exc)
            raise CliError(f"master at {master}: {detail}") from None
