"""One Operator call to the leading master, following a standby's redirect: what a service's
questions and reports to the master (``Reviewer``, ``StatusPublisher``) have in common.

A standby answers UNAVAILABLE with the leader's address as a hint (``leader_hint``): the call is
made again there; UNAVAILABLE without one marks that master failed and asks the detector again.
After ``TRIES`` such answers, or at once for any other error, ``CallError`` with the last code.
"""

from __future__ import annotations

from typing import Any

import grpc

from corral.detector import MasterDetector, leader_hint
from corral.frameworks.sdk.errors import CallError
from corral.tls import Credentials, aio_channel
from corral.v1.operator_pb2_grpc import OperatorStub

TRIES = 3  # a standby's redirect, then the leader


async def call_leader(
    detector: MasterDetector, tls: Credentials, method: str, request: Any, timeout: float
) -> Any:
    last: grpc.aio.AioRpcError | None = None
    for _ in range(TRIES):
        address = await detector.leader()
        async with aio_channel(address, tls) as channel:
            stub = OperatorStub(channel)  # type: ignore[no-untyped-call]  # generated
            try:
                return await getattr(stub, method)(request, timeout=timeout)
            except grpc.aio.AioRpcError as err:
                last = err
                if err.code() != grpc.StatusCode.UNAVAILABLE:
                    raise CallError(method, err.code(), err.details() or "") from None
                hint = leader_hint(err)
                if hint:
                    detector.redirected(hint)
                else:
                    detector.failed(address)
    assert last is not None
    raise CallError(method, last.code(), last.details() or "")
