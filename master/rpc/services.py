"""The master's gRPC services on one server: each servicer decodes wire messages into core
events, awaits the answer and encodes it back (rpc_scheduler.py for frameworks, rpc_agent.py
for agents, rpc_operator.py for operators; rpc_common.py what they share).

Decoding errors and refused calls become INVALID_ARGUMENT / NOT_FOUND / FAILED_PRECONDITION
with the reason; nothing reaches the core from a call that does not decode.
"""

from __future__ import annotations

from typing import Any

import grpc

from corral.master.core.refusals import Denied
from corral.master.rpc.agent import AgentServicer
from corral.master.rpc.checked import add_servicer
from corral.master.rpc.operator import OperatorServicer
from corral.master.rpc.scheduler import SchedulerServicer
from corral.master.runtime import MasterRuntime
from corral.master.security import audit
from corral.master.security.endpoints import guard_denial
from corral.master.security.principals import principal_of
from corral.master.wire.encoded import serialized
from corral.v1 import (
    agent_pb2_grpc,
    operator_pb2,
    operator_pb2_grpc,
    scheduler_pb2,
    scheduler_pb2_grpc,
)


def add_servicers(runtime: MasterRuntime, server: grpc.aio.Server) -> None:
    """The master's three services on ``server``."""
    counting = runtime.metrics.messages.counters  # grpc_server_msg_{received,sent}_total
    scheduler = SchedulerServicer(runtime)
    # Subscribe writes OFFERS as the pre-encoded bytes master/wire/offers.py makes.
    subscribe = grpc.unary_stream_rpc_method_handler(
        scheduler.Subscribe,
        request_deserializer=scheduler_pb2.SubscribeRequest.FromString,
        response_serializer=serialized,
    )
    add_servicer(
        scheduler_pb2_grpc.add_SchedulerServicer_to_server,
        scheduler,
        server,
        {"Subscribe": subscribe},
        counting,
    )
    add_servicer(
        agent_pb2_grpc.add_AgentServiceServicer_to_server,
        AgentServicer(runtime),
        server,
        counting=counting,
    )
    operator = OperatorServicer(runtime)
    # GetState's whole answer comes already serialized (views.state_wire).
    get_state = grpc.unary_unary_rpc_method_handler(
        operator.GetState,
        request_deserializer=operator_pb2.GetStateRequest.FromString,
        response_serializer=serialized,
    )
    add_servicer(
        operator_pb2_grpc.add_OperatorServicer_to_server,
        operator,
        server,
        {"GetState": get_state},
        counting,
        guard=operator_guard(runtime),
    )


def operator_guard(runtime: MasterRuntime) -> Any:
    """Every Operator RPC is an endpoint the caller's principal must be granted
    (master/security/endpoints.py); a refusal ends the call with PERMISSION_DENIED naming the
    rule."""

    async def guard(method: str, context: grpc.aio.ServicerContext[Any, Any]) -> None:
        principal = principal_of(context)
        denial = guard_denial(runtime.acl, principal, method)
        if denial is not None:
            audit.deny(runtime, Denied(denial, principal.name), runtime.stimulus("denied"))
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, denial.message)

    return guard
