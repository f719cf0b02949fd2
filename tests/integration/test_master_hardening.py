"""Issue 17, hardening: what a framework, an agent or an HTTP client sends cannot wedge, crash
or corrupt the master. A real master in this process (gRPC and HTTP on free ports), raw stubs
and raw bytes, so nothing is checked before the master sees it."""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import AsyncIterator
from pathlib import Path
from typing import NoReturn

import grpc
import pytest
from google.protobuf.message import Message

from corral.frameworks.sdk import tls as sdk_tls
from corral.limits import MAX_MESSAGE_BYTES
from corral.master.core.config import MasterConfig
from corral.master.server import RunningMaster, start_master
from corral.master.wire import call_events
from corral.v1 import (
    agent_pb2,
    agent_pb2_grpc,
    operator_pb2,
    operator_pb2_grpc,
    scheduler_pb2_grpc,
)
from corral.v1 import common_pb2 as pb
from corral.v1 import scheduler_pb2 as s
from tests.pki import TestPKI

TIMEOUT = 10.0


@pytest.fixture
def certs(tmp_path: Path) -> TestPKI:
    return TestPKI(tmp_path)


@pytest.fixture
async def master(certs: TestPKI) -> AsyncIterator[RunningMaster]:
    running = await start_master(
        MasterConfig(allocation_interval=0.05),
        "127.0.0.1:0",
        "127.0.0.1:0",
        allocator="numpy",
        tls=certs.server,
    )
    try:
        yield running
    finally:
        await running.stop()


@pytest.fixture
async def channel(master: RunningMaster, certs: TestPKI) -> AsyncIterator[grpc.aio.Channel]:
    # Larger than the master's limit on our side, so the master's own limit is what is tested.
    options = [("grpc.max_send_message_length", 4 * MAX_MESSAGE_BYTES)]
    async with sdk_tls.aio_channel(master.grpc_address, certs.operator, options) as ch:
        yield ch


async def assert_serving(channel: grpc.aio.Channel) -> None:
    stub = operator_pb2_grpc.OperatorStub(channel)  # type: ignore[no-untyped-call]
    state = await stub.GetState(operator_pb2.GetStateRequest(), timeout=TIMEOUT)
    assert isinstance(state, operator_pb2.State)


async def test_a_message_over_the_size_limit_is_refused_by_grpc_and_the_master_serves_on(
    channel: grpc.aio.Channel,
) -> None:
    stub = scheduler_pb2_grpc.SchedulerStub(channel)  # type: ignore[no-untyped-call]
    caller = s.Caller(framework_id="f", stream_id="s")
    ack = s.AcknowledgeRequest(caller=caller)
    # One uuid that takes the message just past the limit.
    ack.acknowledgements.add(task_id="t", agent_id="a", uuid=b"x" * MAX_MESSAGE_BYTES)
    assert MAX_MESSAGE_BYTES < ack.ByteSize() < MAX_MESSAGE_BYTES + 64
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.Acknowledge(ack, timeout=TIMEOUT)
    assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, info.value
    await assert_serving(channel)


# -- (B) a stream the master ends ends with a definite status ---------------------------------


async def test_a_framework_stream_replaced_by_a_new_subscription_ends_with_error_then_ok(
    channel: grpc.aio.Channel,
) -> None:
    stub = scheduler_pb2_grpc.SchedulerStub(channel)  # type: ignore[no-untyped-call]
    info = pb.FrameworkInfo(name="twice", role="*")
    first = stub.Subscribe(s.SubscribeRequest(framework_info=info), timeout=TIMEOUT)
    subscribed = await first.read()
    assert subscribed.HasField("subscribed"), subscribed
    info.id = subscribed.subscribed.framework_id
    second = stub.Subscribe(s.SubscribeRequest(framework_info=info), timeout=TIMEOUT)
    assert (await second.read()).HasField("subscribed")
    # The first stream gets ERROR, then ends cleanly: not UNKNOWN from a None written to gRPC.
    rest = []
    async with asyncio.timeout(TIMEOUT):
        while (event := await first.read()) is not grpc.aio.EOF:
            rest.append(event)
    assert [e.WhichOneof("event") for e in rest if not e.HasField("heartbeat")] == ["error"]
    assert await first.code() == grpc.StatusCode.OK, await first.details()
    second.cancel()
    await assert_serving(channel)


def register(agent_id: str = "", secret: str = "") -> agent_pb2.AgentMessage:
    info = pb.AgentInfo(id=agent_id, hostname="h", resources=pb.Resources(cpus=1, mem=64))
    return agent_pb2.AgentMessage(register=agent_pb2.Register(info=info, secret=secret))


async def test_an_agent_stream_replaced_by_a_reregistration_ends_with_ok(
    channel: grpc.aio.Channel,
) -> None:
    stub = agent_pb2_grpc.AgentServiceStub(channel)  # type: ignore[no-untyped-call]
    first = stub.Connect(timeout=TIMEOUT)
    await first.write(register())
    registered = await first.read()
    assert registered.HasField("registered"), registered
    second = stub.Connect(timeout=TIMEOUT)
    await second.write(register(registered.registered.agent_id, registered.registered.secret))
    assert (await second.read()).HasField("registered")
    async with asyncio.timeout(TIMEOUT):
        assert await first.read() is grpc.aio.EOF
        assert await first.code() == grpc.StatusCode.OK, await first.details()
    second.cancel()
    await assert_serving(channel)


def registers_alive() -> int:
    gc.collect()
    return sum(
        1
        for o in gc.get_objects()
        if isinstance(o, agent_pb2.AgentMessage) and o.HasField("register")
    )


async def test_an_agents_register_message_is_let_go_once_it_is_registered(
    channel: grpc.aio.Channel,
) -> None:
    """A REGISTER carries every task the agent reports (after a failover, all of them): the
    master must not hold it for the stream's life, 50,000 of them at once. (Until the stream's
    next message, gRPC's reader holds the last one read; the agent's heartbeat moves it on.)"""
    stub = agent_pb2_grpc.AgentServiceStub(channel)  # type: ignore[no-untyped-call]
    calls = []
    try:
        for _ in range(3):
            call = stub.Connect(timeout=TIMEOUT)
            calls.append(call)
            await call.write(register())  # this process's copy is let go once written
            assert (await call.read()).HasField("registered")
            await call.write(agent_pb2.AgentMessage(heartbeat=agent_pb2.AgentHeartbeat()))
        async with asyncio.timeout(TIMEOUT):
            while registers_alive() > 0:
                await asyncio.sleep(0.05)
    except TimeoutError:
        raise AssertionError(
            f"{registers_alive()} REGISTER messages still held by 3 open agent streams "
            "after their heartbeats"
        ) from None
    finally:
        for call in calls:
            call.cancel()
    await assert_serving(channel)


async def test_a_calls_stream_whose_reader_fails_ends_internal_not_ok(
    channel: grpc.aio.Channel, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: call_events.CallEvents, request: s.SuppressRequest) -> NoReturn:
        raise RuntimeError("injected bug")

    monkeypatch.setattr(call_events.CallEvents, "suppress", broken)
    stub = scheduler_pb2_grpc.SchedulerStub(channel)  # type: ignore[no-untyped-call]
    call = stub.Calls(timeout=TIMEOUT)
    await call.write(s.CallBatch(calls=[s.Call(id=1, suppress=s.SuppressRequest())]))
    await call.done_writing()
    with pytest.raises(grpc.aio.AioRpcError) as info:
        async with asyncio.timeout(TIMEOUT):
            async for _batch in call:
                pass
    assert info.value.code() == grpc.StatusCode.INTERNAL
    assert "injected bug" in (info.value.details() or "")
    await assert_serving(channel)


# -- (C) what does not decode is INVALID_ARGUMENT, on every service ---------------------------

GARBAGE = b"\xff\xff\xff\xff\xff"


def bad_utf8(msg: Message) -> bytes:
    """``msg`` serialized with its "ZZZZ" string replaced by bytes that are not UTF-8."""
    raw = msg.SerializeToString()
    assert raw.count(b"ZZZZ") == 1
    return raw.replace(b"ZZZZ", b"\\xff\\xfe\\xfd\\xfc")


UNARY = [
    (
        "/corral.v1.Scheduler/Suppress",
        bad_utf8(s.SuppressRequest(caller=s.Caller(framework_id="ZZZZ"))),
    ),
    ("/corral.v1.Scheduler/Accept", GARBAGE),
    ("/corral.v1.Operator/Explain", bad_utf8(operator_pb2.ExplainRequest(framework_id="ZZZZ"))),
    ("/corral.v1.Operator/GetState", GARBAGE),
]
SERVER_STREAMS = [
    (
        "/corral.v1.Scheduler/Subscribe",
        bad_utf8(s.SubscribeRequest(framework_info=pb.FrameworkInfo(name="ZZZZ", role="*"))),
    ),
    ("/corral.v1.Operator/Watch", GARBAGE),
]
BIDI_STREAMS = [
    ("/corral.v1.Scheduler/Calls", [GARBAGE]),
    (
        "/corral.v1.Scheduler/Calls",
        [
            bad_utf8(
                s.CallBatch(
                    calls=[
                        s.Call(
                            id=1, suppress=s.SuppressRequest(caller=s.Caller(framework_id="ZZZZ"))
                        )
                    ]
                )
            )
        ],
    ),
    ("/corral.v1.AgentService/Connect", [GARBAGE]),
    ("/corral.v1.AgentService/Connect", [register().SerializeToString(), GARBAGE]),
]


def assert_invalid(error: grpc.aio.AioRpcError) -> None:
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, error
    assert "does not decode" in (error.details() or ""), error.details()


@pytest.mark.parametrize(("method", "payload"), UNARY, ids=[m for m, _ in UNARY])
async def test_an_undecodable_unary_request_is_invalid_argument(
    channel: grpc.aio.Channel, method: str, payload: bytes
) -> None:
    rpc_ = channel.unary_unary(method)
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await rpc_(payload, timeout=TIMEOUT)
    assert_invalid(info.value)
    await assert_serving(channel)


@pytest.mark.parametrize(("method", "payload"), SERVER_STREAMS, ids=[m for m, _ in SERVER_STREAMS])
async def test_an_undecodable_stream_request_is_invalid_argument(
    channel: grpc.aio.Channel, method: str, payload: bytes
) -> None:
    call = channel.unary_stream(method)(payload, timeout=TIMEOUT)
    with pytest.raises(grpc.aio.AioRpcError) as info:
        async for _msg in call:
            pass
    assert_invalid(info.value)
    await assert_serving(channel)


@pytest.mark.parametrize(
    ("method", "payloads"),
    BIDI_STREAMS,
    ids=["calls-garbage", "calls-utf8", "connect-first", "connect-later"],
)
async def test_an_undecodable_message_on_a_stream_is_invalid_argument(
    channel: grpc.aio.Channel, method: str, payloads: list[bytes]
) -> None:
    call = channel.stream_stream(method)(timeout=TIMEOUT)
    for payload in payloads:
        await call.write(payload)
    with pytest.raises(grpc.aio.AioRpcError) as info:
        async with asyncio.timeout(TIMEOUT):
            while await call.read() is not grpc.aio.EOF:
                pass  # REGISTERED, before the bad message
    assert_invalid(info.value)
    await assert_serving(channel)


# -- (D) a half-sent HTTP request does not hold its socket open --------------------------------

READ_TIMEOUT = 0.5


@pytest.fixture
async def http_master(certs: TestPKI) -> AsyncIterator[RunningMaster]:
    running = await start_master(
        MasterConfig(),
        "127.0.0.1:0",
        "127.0.0.1:0",
        allocator="numpy",
        http_read_timeout=READ_TIMEOUT,
        tls=certs.server,
    )
    try:
        yield running
    finally:
        await running.stop()


async def _connect(
    address: str, tls: sdk_tls.TLS | None
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection to the HTTP port: its TLS handshake done with ``tls``, or raw TCP."""
    host, _, port = address.rpartition(":")
    if tls is None:
        return await asyncio.open_connection(host, int(port))
    return await asyncio.open_connection(host, int(port), ssl=tls.ssl_context())


async def _closed_within(reader: asyncio.StreamReader, seconds: float) -> bytes:
    """Everything the server sends until it closes the connection, which must be soon."""
    try:
        async with asyncio.timeout(seconds):
            return await reader.read()
    except TimeoutError:
        raise AssertionError(f"the master kept the connection open past {seconds:g} s") from None


async def test_half_sent_http_requests_are_disconnected_and_whole_ones_answered(
    http_master: RunningMaster, certs: TestPKI
) -> None:
    address = http_master.http_address
    partial = [
        b"",  # connected, nothing sent
        b"GET /health HTTP/1.1\r\nHost: x\r\n",  # the head never ends
        b"GET /heal",
    ]
    conns = [await _connect(address, certs.operator) for _ in range(20)]
    for i, (_reader, writer) in enumerate(conns):
        # The first may be closed already (TLS handshakes take a while on a busy machine):
        # closed is what the test waits for.
        with contextlib.suppress(ConnectionError):
            writer.write(partial[i % len(partial)])
            await writer.drain()
    # Well past the bound, far short of aiohttp's own keep-alive default (an hour).
    for reader, writer in conns:
        assert await _closed_within(reader, 10 * READ_TIMEOUT) == b""
        writer.close()
    # A whole request is answered.
    reader, writer = await _connect(address, certs.operator)
    writer.write(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    answer = await _closed_within(reader, TIMEOUT)
    writer.close()
    assert answer.startswith(b"HTTP/1.1 200"), answer[:100]


async def test_a_second_request_left_half_sent_after_a_response_is_disconnected(
    http_master: RunningMaster, certs: TestPKI
) -> None:
    reader, writer = await _connect(http_master.http_address, certs.operator)
    writer.write(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\nGET /health HTTP/1.1\r\n")
    answer = await _closed_within(reader, 10 * READ_TIMEOUT)
    writer.close()
    assert answer.startswith(b"HTTP/1.1 200") and answer.count(b"HTTP/1.1 ") == 1, answer


async def test_a_tls_handshake_never_finished_or_plain_text_does_not_hold_a_socket(
    http_master: RunningMaster,
) -> None:
    """The handshake is bounded like a request's head (not asyncio's 60 s); plain HTTP sent to
    the TLS port is not answered in plain text."""
    silent = [await _connect(http_master.http_address, None) for _ in range(5)]
    plain = [await _connect(http_master.http_address, None) for _ in range(5)]
    for _reader, writer in plain:
        writer.write(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        await writer.drain()
    for reader, writer in silent + plain:
        answer = await _closed_within(reader, 10 * READ_TIMEOUT)
        assert b"HTTP/1.1 200" not in answer, answer[:100]
        writer.close()
