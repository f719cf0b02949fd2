"""Issue 17: no background task of the agent ends unnoticed. A stream loop that dies fails the
agent (run() returns 1, for its supervisor to restart it); a writer that dies ends its stream
so the connection reconnects, instead of leaving a stream up that sends nothing."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import pytest
import structlog

from corral.agent.config import AgentConfig
from corral.agent.connection import MasterConnection, ReconnectBackoff
from corral.agent.runtime import Agent
from corral.resources import parse_resources
from corral.v1 import agent_pb2
from tests.unit.test_agent_connection import FakeCall, FakeChannel, Owner, until


async def test_an_agent_whose_stream_loop_dies_fails_with_exit_status_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def dies(self: MasterConnection) -> None:
        raise RuntimeError("injected stream bug")

    monkeypatch.setattr(MasterConnection, "run", dies)
    config = AgentConfig(
        hostname="h",
        resources=parse_resources("cpus:1;mem:64"),
        work_dir=tmp_path,
        checkpoint=False,
    )
    agent = Agent(config, channel=FakeChannel())  # type: ignore[arg-type]
    with structlog.testing.capture_logs() as logs:
        code = await asyncio.wait_for(agent.run(), 10)
    assert code == 1
    [failure] = [e for e in logs if e["event"] == "background_task_failed"]
    assert failure["task"] == "agent-stream" and "injected stream bug" in failure["error"]


class BrokenWriteCall(FakeCall):
    async def write(self, msg: agent_pb2.AgentMessage) -> None:
        raise RuntimeError("injected writer bug")


async def test_a_writer_that_dies_ends_its_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    channel, owner = FakeChannel(), Owner()

    def broken_connect(*args: object, **kwargs: object) -> Any:
        def connect() -> FakeCall:
            channel.calls.append(BrokenWriteCall())
            return channel.calls[-1]

        return connect

    monkeypatch.setattr(channel, "stream_stream", broken_connect)
    conn = MasterConnection(channel, owner, ReconnectBackoff(0.001, 0.002), rng=random.Random(1))  # type: ignore[arg-type]
    owner.conn = conn
    with structlog.testing.capture_logs() as logs:
        runner = asyncio.get_running_loop().create_task(conn.run())
        try:
            await until(lambda: channel.calls and channel.calls[0].cancelled)
        finally:
            runner.cancel()
            await asyncio.gather(runner, return_exceptions=True)
    failures = [e for e in logs if e["event"] == "background_task_failed"]
    assert failures and failures[0]["task"] == "agent-writer", logs
