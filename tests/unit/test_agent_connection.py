"""The stream's outbox, without a network: a fake channel records what the writer writes."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator
from typing import Any

import grpc.aio

from corral.agent.connection import ChannelPool, MasterConnection, ReconnectBackoff
from corral.detector import StaticDetector
from corral.tls import Insecure
from corral.v1 import agent_pb2, common_pb2


class FakeCall:
    def __init__(self) -> None:
        self.written: list[agent_pb2.AgentMessage] = []
        self.inbox: asyncio.Queue[Any] = asyncio.Queue()
        self.cancelled = False

    async def write(self, msg: agent_pb2.AgentMessage) -> None:
        copy = agent_pb2.AgentMessage()
        copy.CopyFrom(msg)
        self.written.append(copy)

    async def read(self) -> Any:
        msg = await self.inbox.get()
        if msg is _CANCELLED:
            raise asyncio.CancelledError  # as grpc.aio's read of a call cancelled here
        return msg

    async def done_writing(self) -> None:
        await self.inbox.put(grpc.aio.EOF)

    def cancel(self) -> bool:
        if not self.cancelled:
            self.inbox.put_nowait(_CANCELLED)
        self.cancelled = True
        return True


_CANCELLED = object()


class FakeChannel:
    def __init__(self) -> None:
        self.calls: list[FakeCall] = []

    def stream_stream(self, *args: object, **kwargs: object) -> Any:
        def connect() -> FakeCall:
            self.calls.append(FakeCall())
            return self.calls[-1]

        return connect


class Owner:
    def __init__(self) -> None:
        self.conn: MasterConnection | None = None
        self.opened = 0
        self.closed: list[str] = []
        self.messages: list[agent_pb2.MasterMessage] = []

    def on_open(self) -> None:
        self.opened += 1
        assert self.conn is not None
        # Everything queued in this loop iteration goes out as few messages as possible.
        self.conn.send(agent_pb2.AgentMessage(register=agent_pb2.Register()))
        self.add_status("a")
        self.add_status("b")
        self.conn.send_heartbeat(1.0)
        self.conn.send_heartbeat(2.0)
        self.add_status("c")

    def add_status(self, task_id: str, state: int = common_pb2.TASK_STATE_RUNNING) -> None:
        assert self.conn is not None
        slot = self.conn.status_slot(("f", task_id), state == common_pb2.TASK_STATE_STARTING)
        assert slot is not None, "the stream is open: there is a batch to add to"
        slot.task_id, slot.state = task_id, state  # type: ignore[assignment]

    def on_message(self, message: agent_pb2.MasterMessage) -> None:
        self.messages.append(message)

    def on_close(self, error: str) -> None:
        self.closed.append(error)


async def until(cond: Any) -> None:
    async with asyncio.timeout(5):
        while not cond():
            await asyncio.sleep(0)


async def test_outbox_coalesces_statuses_and_heartbeats_and_reconnects() -> None:
    channel, owner = FakeChannel(), Owner()
    conn = MasterConnection(
        channel,
        owner,
        ReconnectBackoff(0.001, 0.002),
        rng=random.Random(1),
    )
    owner.conn = conn
    runner = asyncio.get_running_loop().create_task(conn.run())
    try:
        await until(lambda: channel.calls and len(channel.calls[0].written) == 4)
        kinds = [m.WhichOneof("message") for m in channel.calls[0].written]
        assert kinds == ["register", "status_updates", "heartbeat", "status_updates"]
        first = channel.calls[0].written
        assert [s.task_id for s in first[1].status_updates.statuses] == ["a", "b"]
        assert first[2].heartbeat.timestamp == 2.0
        # A message from the master reaches the owner; the end of the stream reconnects.
        channel.calls[0].inbox.put_nowait(agent_pb2.MasterMessage(shutdown=agent_pb2.Shutdown()))
        await until(lambda: owner.messages)
        channel.calls[0].inbox.put_nowait(grpc.aio.EOF)
        await until(lambda: len(channel.calls) == 2 and owner.opened == 2)
        assert owner.closed == ["stream ended by the master"]
        # Closing with a flush half-closes and waits for the master to end the stream.
        await conn.close(flush_timeout=1.0)
        assert channel.calls[1].cancelled
        await asyncio.wait_for(runner, 1.0)
    finally:
        runner.cancel()


def test_backoff_is_capped_with_jitter() -> None:
    backoff, rng = ReconnectBackoff(0.1, 5.0), random.Random(7)
    delays = [backoff.delay(n, rng) for n in range(12)]
    assert 0.05 <= delays[0] <= 0.1
    assert all(2.5 <= d <= 5.0 for d in delays[7:])
    assert len({round(d, 6) for d in delays[7:]}) > 1  # jittered, not lockstep


STARTING, RUNNING = common_pb2.TASK_STATE_STARTING, common_pb2.TASK_STATE_RUNNING


def written_statuses(msg: agent_pb2.AgentMessage) -> list[tuple[str, int]]:
    return [(s.task_id, s.state) for s in msg.status_updates.statuses]


@contextlib.asynccontextmanager
async def opened() -> AsyncIterator[tuple[FakeChannel, Owner, MasterConnection]]:
    """A connection running on a fake channel, its opening messages (Owner.on_open) written."""
    channel, owner = FakeChannel(), Owner()
    conn = MasterConnection(channel, owner, ReconnectBackoff(0.001, 0.002), random.Random(1))
    owner.conn = conn
    runner = asyncio.get_running_loop().create_task(conn.run())
    try:
        await until(lambda: channel.calls and len(channel.calls[0].written) == 4)
        yield channel, owner, conn
    finally:
        runner.cancel()


async def test_a_status_queued_by_the_next_callback_takes_its_starting_place() -> None:
    """A launch queues STARTING and starts the task in a later callback (a simulated task, or
    a process already forked), which queues RUNNING: one message leaves, and RUNNING takes the
    place of the STARTING still in it. Another task's STARTING stays."""
    async with opened() as (channel, owner, _conn):
        owner.add_status("x", STARTING)
        owner.add_status("y", STARTING)
        asyncio.get_running_loop().call_soon(owner.add_status, "x", RUNNING)
        await until(lambda: len(channel.calls[0].written) >= 5)
        await asyncio.sleep(0)  # a second message, if any, would be written by now
        await asyncio.sleep(0)
        (last,) = channel.calls[0].written[4:]
        assert written_statuses(last) == [("x", RUNNING), ("y", STARTING)]


async def test_a_starting_already_written_or_behind_another_message_stays() -> None:
    """Only a STARTING still in the open message is replaced: once written, or with another
    message queued after it, the next status goes in a message of its own."""
    async with opened() as (channel, owner, conn):
        written = channel.calls[0].written
        owner.add_status("x", STARTING)
        await until(lambda: len(written) == 5)
        owner.add_status("x", RUNNING)
        await until(lambda: len(written) == 6)
        assert [written_statuses(m) for m in written[4:]] == [[("x", STARTING)], [("x", RUNNING)]]
        owner.add_status("z", STARTING)
        conn.send_heartbeat(3.0)
        owner.add_status("z", RUNNING)
        await until(lambda: len(written) == 9)
        assert [m.WhichOneof("message") for m in written[6:]] == [
            "status_updates",
            "heartbeat",
            "status_updates",
        ]
        assert written_statuses(written[6]) == [("z", STARTING)]
        assert written_statuses(written[8]) == [("z", RUNNING)]


async def test_a_dropped_stream_stays_away_then_registers_again() -> None:
    # corral loadtest --loss-wave: the stream is cut as a partition would cut it, and the
    # agent reconnects only after the time it was told to stay away, not at its backoff.
    channel, owner = FakeChannel(), Owner()
    conn = MasterConnection(channel, owner, ReconnectBackoff(0.001, 0.002), rng=random.Random(1))
    owner.conn = conn
    loop = asyncio.get_running_loop()
    runner = loop.create_task(conn.run())
    try:
        await until(lambda: channel.calls and channel.calls[0].written)
        channel.calls[0].inbox.put_nowait(agent_pb2.MasterMessage(shutdown=agent_pb2.Shutdown()))
        await until(lambda: conn.connected)
        dropped_at = loop.time()
        conn.drop(0.2)
        await until(lambda: owner.closed)
        assert owner.closed == ["dropped"] and channel.calls[0].cancelled
        async with asyncio.timeout(5):
            while len(channel.calls) < 2:
                await asyncio.sleep(0.01)
        assert loop.time() - dropped_at >= 0.19, "reconnected before its time away"
        await until(lambda: owner.opened == 2 and channel.calls[1].written)  # a new stream
        assert channel.calls[1].written[0].WhichOneof("message") == "register"
        # The next break is an ordinary one: the backoff again, not the time away.
        channel.calls[1].inbox.put_nowait(agent_pb2.MasterMessage(shutdown=agent_pb2.Shutdown()))
        await until(lambda: conn.connected)
        broke_at = loop.time()
        channel.calls[1].inbox.put_nowait(grpc.aio.EOF)
        await until(lambda: len(channel.calls) == 3)
        assert loop.time() - broke_at < 0.19
        await conn.close()
        await asyncio.wait_for(runner, 1.0)
    finally:
        runner.cancel()


class FakePool(ChannelPool):
    """A pool of one fake channel (every address, every slot), with the set-up bound."""

    def __init__(self, setting_up: int) -> None:
        super().__init__(Insecure(), setting_up=setting_up)
        self.channel = FakeChannel()

    def get(self, address: str, slot: int = 0) -> Any:
        return self.channel


async def test_a_pool_sets_up_so_many_streams_at_once_and_the_next_as_the_master_answers() -> None:
    """Thousands of simulated agents reconnecting together: with the pool's bound only the
    first ``setting_up`` dial; each answered stream (REGISTERED) lets the next agent dial, in
    the order they came, and a stream given up does too."""
    pool = FakePool(setting_up=2)
    detector = StaticDetector(("leader:1",))
    owners = [Owner() for _ in range(5)]
    conns = []
    for owner in owners:
        conn = MasterConnection(
            None,
            owner,
            ReconnectBackoff(0.001, 0.002),
            rng=random.Random(1),
            detector=detector,
            pool=pool,
        )
        owner.conn = conn
        conns.append(conn)
    loop = asyncio.get_running_loop()
    runners = [loop.create_task(conn.run()) for conn in conns]
    calls = pool.channel.calls
    try:
        await until(lambda: len(calls) >= 2)
        for _ in range(20):  # the others wait their turn, however long
            await asyncio.sleep(0)
        assert [o.opened for o in owners] == [1, 1, 0, 0, 0], f"{len(calls)} streams dialled"

        # The first answered: the third agent dials; the second's stream ends unanswered
        # (it will dial again, behind the others): the fourth dials.
        calls[0].inbox.put_nowait(agent_pb2.MasterMessage(shutdown=agent_pb2.Shutdown()))
        await until(lambda: len(calls) == 3)
        assert owners[2].opened == 1 and conns[0].connected
        calls[1].inbox.put_nowait(grpc.aio.EOF)
        await until(lambda: len(calls) == 4)
        assert owners[3].opened == 1 and owners[4].opened == 0
        for call in calls[2:4]:
            call.inbox.put_nowait(agent_pb2.MasterMessage(shutdown=agent_pb2.Shutdown()))
        await until(lambda: owners[4].opened == 1 and owners[1].opened == 2)
        assert len(calls) == 6
    finally:
        for conn in conns:
            await conn.close()
        for runner in runners:
            runner.cancel()
        await asyncio.gather(*runners, return_exceptions=True)
