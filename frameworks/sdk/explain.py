"""Why a framework's demands are unmet, from the master's operator API (``Operator.Explain``,
the same answer as ``corral explain``): for a framework that reports to its own users why its
work waits (the serving service's deployments)."""

from __future__ import annotations

import json
from dataclasses import dataclass

import grpc

from corral.frameworks.sdk.errors import CallError
from corral.tls import Credentials, aio_channel, resolve
from corral.v1.operator_pb2 import ExplainRequest
from corral.v1.operator_pb2_grpc import OperatorStub


@dataclass(frozen=True, slots=True)
class PendingDemand:
    """One demand with tasks the master could not place in its last cycle: ``summary`` is its
    one line ("3 of 3 agents: insufficient cpus"), ``reasons`` each reason by itself."""

    name: str
    count: int
    unmet: int
    summary: str
    reasons: tuple[str, ...]


async def why_pending(
    master: str, framework_id: str, timeout: float = 5.0, *, tls: Credentials | None = None
) -> list[PendingDemand]:
    """The framework's pending demands and why, as the master saw them in its last cycle.
    Raises ``CallError`` (NOT_FOUND for an unknown framework, UNAVAILABLE for a master that
    does not answer, PERMISSION_DENIED when the caller may not read explanations)."""
    async with aio_channel(master, resolve(tls)) as channel:
        stub = OperatorStub(channel)  # type: ignore[no-untyped-call]  # generated, unannotated
        try:
            e = await stub.Explain(ExplainRequest(framework_id=framework_id), timeout=timeout)
        except grpc.aio.AioRpcError as err:
            raise CallError("Explain", err.code(), err.details() or "") from None
    out = []
    for d in json.loads(e.pending_demands_json or "[]"):
        out.append(
            PendingDemand(
                name=str(d.get("name", "")),
                count=int(d.get("count", 0)),
                unmet=int(d.get("unmet", 0)),
                summary=str(d.get("summary", "")),
                reasons=tuple(str(r.get("reason", "")) for r in d.get("reasons", [])),
            )
        )
    return out
