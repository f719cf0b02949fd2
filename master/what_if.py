"""``Operator.Simulate`` / ``POST /api/v1/simulate``: the autoscaler's what-if, checked at the
wire and answered by the core's ``simulation.simulate`` between two events (a query: it changes
nothing). The HTTP body is the request message in protobuf's JSON mapping, so both paths parse
one message the same way. Bad input: ``WireError`` (INVALID_ARGUMENT / HTTP 400)."""

from __future__ import annotations

import math
from typing import Any

from google.protobuf import json_format

from corral import limits
from corral.master.core.master import MasterCore
from corral.master.core.simulation import NodeGroupOption, SimulationRequest, simulate
from corral.master.runtime import MasterRuntime
from corral.master.wire.convert import WireError, agent_spec_from_pb
from corral.master.wire.convert_checks import count, idents, name
from corral.v1 import operator_pb2

MAX_GROUPS = 1000
MAX_NEW_PER_GROUP = 10_000


def request_from_pb(request: operator_pb2.SimulateRequest) -> SimulationRequest:
    count(request.groups, "simulate: groups", MAX_GROUPS)
    groups: list[NodeGroupOption] = []
    seen: set[str] = set()
    for g in request.groups:
        label = name(g.name, "simulate: a group's name")
        if not label:
            raise WireError("simulate: a group's name is empty")
        if label in seen:
            raise WireError(f"simulate: group {limits.echo(label)} is named twice")
        seen.add(label)
        if not 0 <= g.max_new <= MAX_NEW_PER_GROUP:
            raise WireError(
                f"simulate: group {limits.echo(label)}: max_new must be 0..{MAX_NEW_PER_GROUP}, "
                f"got {g.max_new}"
            )
        template = operator_pb2.SimulatedGroup().template
        template.CopyFrom(g.template)
        template.id = ""
        if not template.hostname:
            template.hostname = label
        groups.append(NodeGroupOption(label, agent_spec_from_pb(template), g.max_new))
    threshold = 0.5
    if request.HasField("utilization_threshold"):
        threshold = request.utilization_threshold
        if not math.isfinite(threshold) or not 0.0 <= threshold <= 1.0:
            raise WireError(f"simulate: utilization_threshold must be 0..1, got {threshold}")
    cutoff = request.priority_cutoff if request.HasField("priority_cutoff") else None
    remove = idents(list(request.remove_agent_ids), "simulate: agents", limits.MAX_IDS_PER_CALL)
    return SimulationRequest(tuple(groups), cutoff, remove, threshold)


def request_from_json(body: Any) -> SimulationRequest:
    if not isinstance(body, dict):
        raise WireError("the body must be a JSON object (a SimulateRequest)")
    message = operator_pb2.SimulateRequest()
    try:
        json_format.ParseDict(body, message)
    except json_format.ParseError as exc:
        raise WireError(f"simulate: {exc}") from None
    return request_from_pb(message)


async def answer(rt: MasterRuntime, request: SimulationRequest) -> dict[str, Any]:
    now = rt.clock()

    def run(core: MasterCore) -> dict[str, Any]:
        return simulate(core, request, now)

    return await rt.query(run)
