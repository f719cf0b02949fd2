"""Why the master has not placed what a framework asked for: the Operator ``Explain`` answer
for the driver's own framework, as plain Python (``driver.explain()``).

A framework whose work waits can show its user the master's reason ("2 of 2 agents:
insufficient cpus") instead of waiting in silence, and give up when it will not change.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import grpc

from corral.frameworks.sdk.errors import CallError
from corral.v1.operator_pb2 import ExplainRequest
from corral.v1.operator_pb2 import Explanation as ExplanationPb
from corral.v1.operator_pb2_grpc import OperatorStub


@dataclass(frozen=True)
class PendingDemand:
    """One demand with tasks the master has not placed, and why."""

    name: str
    count: int  # tasks the demand asks for
    unmet: int  # of them, neither running nor offered
    priority_class: str
    min_member: int  # > 0: a gang of at least this many
    summary: str  # the master's one line: "2 of 2 agents: insufficient cpus"
    reasons: Mapping[str, int]  # reason -> agents it applies to, most agents first

    def line(self) -> str:
        """``train: 4 of 4 unplaced: 2 of 2 agents: insufficient gpus``"""
        return f"{self.name}: {self.unmet} of {self.count} unplaced: {self.summary}"


@dataclass(frozen=True)
class Explanation:
    """The master's view of this framework's last allocation cycle."""

    framework_id: str
    state: str  # subscribed, disconnected, removed
    suppressed: bool
    offered_agents: int  # agents it was offered in the last cycle
    held_back: Mapping[str, int]  # why it was not offered more: reason -> agents or frameworks
    pending: tuple[PendingDemand, ...]  # demands with unmet tasks

    def why_pending(self) -> str:
        """One line for people: each pending demand and the master's reason."""
        if not self.pending:
            return "no demand is pending at the master"
        return "; ".join(d.line() for d in self.pending)


def _pending(record: Mapping[str, Any]) -> PendingDemand:
    reasons = {str(r["reason"]): int(r["agents"]) for r in record.get("reasons", ())}
    return PendingDemand(
        name=str(record["name"]),
        count=int(record["count"]),
        unmet=int(record["unmet"]),
        priority_class=str(record.get("priority_class", "")),
        min_member=int(record.get("min_member", 0)),
        summary=str(record.get("summary", "")),
        reasons=MappingProxyType(reasons),
    )


def from_pb(e: ExplanationPb) -> Explanation:
    records = json.loads(e.pending_demands_json or "[]")
    return Explanation(
        framework_id=e.framework_id,
        state=e.state,
        suppressed=e.suppressed,
        offered_agents=e.offered_agents,
        held_back=MappingProxyType(dict(e.reasons)),
        pending=tuple(_pending(r) for r in records),
    )


async def ask(channel: grpc.aio.Channel, framework_id: str, timeout: float) -> Explanation:
    """``Operator.Explain`` for ``framework_id`` on ``channel``; ``CallError`` if refused."""
    stub = OperatorStub(channel)  # type: ignore[no-untyped-call]
    try:
        answer = await stub.Explain(ExplainRequest(framework_id=framework_id), timeout=timeout)
    except grpc.aio.AioRpcError as err:
        raise CallError("Explain", err.code(), err.details() or "") from None
    return from_pb(answer)
