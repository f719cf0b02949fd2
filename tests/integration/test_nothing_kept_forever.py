"""Nothing kept forever, on a real master with a real registry (issue #30, item 8): unreachable
agents past --registry-max-agent-count are forgotten oldest first, in the state and in the
SQLite file a restart reads; a framework asking for a failover timeout past
--max-failover-timeout is removed once that runs out."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc
import pytest

from corral.frameworks.sdk import tls as sdk_tls
from corral.frameworks.sdk.testing import LocalCluster
from corral.v1 import agent_pb2, agent_pb2_grpc, operator_pb2, operator_pb2_grpc, scheduler_pb2_grpc
from corral.v1 import common_pb2 as pb
from corral.v1 import scheduler_pb2 as s

pytestmark = pytest.mark.e2e


async def until(check: Callable[[], Awaitable[bool]], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:g}s: {what}")
        await asyncio.sleep(0.1)


def events(cluster: LocalCluster, reason: str) -> list[dict[str, Any]]:
    path = f"/api/v1/events?reason={reason}"
    found: list[dict[str, Any]] = json.loads(
        sdk_tls.http_get(path, cluster.http, cluster.tls, timeout=10)
    )
    return found


def registry_agents(cluster: LocalCluster) -> set[str]:
    db = sqlite3.connect(cluster.work_dir / "master" / "registry.db")
    try:
        return {row[0] for row in db.execute("SELECT agent_id FROM agents")}
    finally:
        db.close()


async def agent_states(channel: grpc.aio.Channel) -> dict[str, str]:
    stub = operator_pb2_grpc.OperatorStub(channel)  # type: ignore[no-untyped-call]
    state = await stub.GetState(operator_pb2.GetStateRequest(), timeout=10)
    return {a.info.id: a.state for a in state.agents}


async def test_unreachable_agents_past_the_count_are_forgotten_oldest_first(
    tmp_path: Path,
) -> None:
    flags = ("--agent-timeout", "1", "--registry-max-agent-count", "2")
    async with LocalCluster(agents=0, work_dir=tmp_path, master_args=flags) as cluster:
        async with cluster.channel() as channel:
            stub = agent_pb2_grpc.AgentServiceStub(channel)  # type: ignore[no-untyped-call]
            gone: list[str] = []
            for i in range(4):  # one after the other: each becomes unreachable after the last
                call = stub.Connect()
                info = pb.AgentInfo(hostname=f"gone-{i}", resources=pb.Resources(cpus=1, mem=64))
                await call.write(agent_pb2.AgentMessage(register=agent_pb2.Register(info=info)))
                reply = await asyncio.wait_for(call.read(), 10)
                gone.append(reply.registered.agent_id)
                call.cancel()

                async def unreachable(aid: str = gone[-1]) -> bool:
                    return (await agent_states(channel)).get(aid, "") in ("unreachable", "")

                await until(unreachable, f"agent {gone[-1]} unreachable")

            async def two_left() -> bool:
                return set(await agent_states(channel)) == set(gone[2:])

            await until(two_left, f"only the newest two of {gone} kept")
        assert registry_agents(cluster) == set(gone[2:])
        pruned = events(cluster, "AgentPruned")
        assert [e["subject"] for e in pruned] == gone[:2]
        assert "--registry-max-agent-count" in pruned[0]["message"]
        await cluster.restart_master()  # the same work dir: the registry as it was left
        async with cluster.channel() as channel:
            assert set(await agent_states(channel)) == set(gone[2:])


async def test_a_framework_asking_for_forever_is_removed_after_the_longest_timeout(
    tmp_path: Path,
) -> None:
    flags = ("--failover-timeout", "1", "--max-failover-timeout", "2")
    async with (
        LocalCluster(agents=0, work_dir=tmp_path, master_args=flags) as cluster,
        cluster.channel() as channel,
    ):
        scheduler = scheduler_pb2_grpc.SchedulerStub(channel)  # type: ignore[no-untyped-call]
        info = pb.FrameworkInfo(name="forever", role="*", failover_timeout=1e9)
        call = scheduler.Subscribe(s.SubscribeRequest(framework_info=info))
        first = await asyncio.wait_for(call.read(), 10)
        fid = first.subscribed.framework_id
        [capped] = events(cluster, "FailoverTimeoutCapped")
        assert capped["subject"] == fid and "1e+09s" in capped["message"]
        call.cancel()  # gone, and asked to be kept forever
        operator = operator_pb2_grpc.OperatorStub(channel)  # type: ignore[no-untyped-call]

        async def removed() -> bool:
            state = await operator.GetState(operator_pb2.GetStateRequest(), timeout=10)
            return any(f.info.id == fid and f.state == "removed" for f in state.frameworks)

        await until(removed, f"framework {fid} removed 2 s after it went")
        [why] = [e for e in events(cluster, "FrameworkRemoved") if e["subject"] == fid]
        assert "failover timeout (2s) ran out" in why["message"]
