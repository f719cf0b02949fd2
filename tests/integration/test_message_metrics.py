"""The master counts each gRPC method's messages, received and sent, under go-grpc-prometheus'
names (grpc_server_msg_{received,sent}_total), on a real master over real sockets."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest

from corral.frameworks import sdk
from corral.frameworks.sdk.testing import LocalCluster
from corral.loadtest.master_http import MasterSession
from corral.loadtest.scrape import Scrape, fetch
from corral.v1 import operator_pb2, operator_pb2_grpc
from tests.integration.decliner import Decliner

pytestmark = pytest.mark.e2e

RECEIVED = "grpc_server_msg_received_total"
SENT = "grpc_server_msg_sent_total"


def _count(s: Scrape, name: str, grpc_type: str, service: str, method: str) -> float:
    return s.value(name, grpc_type=grpc_type, grpc_service=service, grpc_method=method)


async def test_each_methods_messages_are_counted(tmp_path: Any) -> None:
    async with LocalCluster(
        agents=1,
        agent_resources="cpus:2;mem:1024;disk:100",
        work_dir=tmp_path,
        master_args=("--allocation-interval", "0.2"),
    ) as cluster:
        scheduler = Decliner()
        info = sdk.FrameworkInfo(name="counted", role="*")
        async with (
            sdk.Driver(scheduler, info, cluster.master) as driver,
            MasterSession() as http,
            cluster.channel() as channel,
        ):
            await asyncio.wait_for(scheduler.offered.wait(), 20)
            assert driver.framework_id
            operator = operator_pb2_grpc.OperatorStub(channel)
            before = await fetch(http, cluster.http, 0.0)

            # A unary call: one message each way.
            await operator.GetRoles(operator_pb2.GetRolesRequest())
            # A refused unary call: received, and answered with a status, not a message.
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await operator.Explain(operator_pb2.ExplainRequest(framework_id="nope"))
            assert refused.value.code() == grpc.StatusCode.NOT_FOUND
            after = await fetch(http, cluster.http, 1.0)

            op = "corral.v1.Operator"
            for method, received, sent in (("GetRoles", 1, 1), ("Explain", 1, 0)):
                got = (
                    _count(after, RECEIVED, "unary", op, method)
                    - _count(before, RECEIVED, "unary", op, method),
                    _count(after, SENT, "unary", op, method)
                    - _count(before, SENT, "unary", op, method),
                )
                assert got == (received, sent), (method, got)

            # The streams: the agent registered on Connect and was answered; the framework
            # subscribed (one request, then SUBSCRIBED and OFFERS sent) and declined on the
            # CALLS stream (a batch in, a result batch out).
            agent = ("bidi_stream", "corral.v1.AgentService", "Connect")
            assert _count(after, RECEIVED, *agent) >= 1
            assert _count(after, SENT, *agent) >= 1
            subscribe = ("server_stream", "corral.v1.Scheduler", "Subscribe")
            assert _count(after, RECEIVED, *subscribe) == 1
            assert _count(after, SENT, *subscribe) >= 2
            calls = ("bidi_stream", "corral.v1.Scheduler", "Calls")
            assert _count(after, RECEIVED, *calls) >= scheduler.declined
            assert _count(after, SENT, *calls) >= scheduler.declined
