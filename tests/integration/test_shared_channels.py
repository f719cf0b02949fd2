"""frameworks/sdk/shared_channels.py: a process's TLS channels to one master with one
credential are one connection, as gRPC's plain-text channels are, and stay up while any user
holds one; another credential is another connection."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import pytest

from corral.frameworks.sdk import tls as sdk_tls
from tests.pki import TestPKI

SERVICE = "test.Echo"


def _identity(b: bytes) -> bytes:
    return b


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[tuple[str, TestPKI]]:
    certs = TestPKI(tmp_path)

    async def echo(request: bytes, context: Any) -> bytes:
        return request

    srv = grpc.aio.server()
    handler = grpc.unary_unary_rpc_method_handler(echo, _identity, _identity)
    srv.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(SERVICE, {"Echo": handler}),)
    )
    port = srv.add_secure_port("127.0.0.1:0", certs.server.grpc_credentials())
    await srv.start()
    try:
        yield f"127.0.0.1:{port}", certs
    finally:
        await srv.stop(grace=None)


def _connections(address: str) -> int:
    port = address.rsplit(":", 1)[1]
    out = subprocess.run(
        ["ss", "-tnH", "state", "established", f"( dport = :{port} )"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return len(out.splitlines())


async def _echo(channel: grpc.aio.Channel, text: bytes) -> bytes:
    call = channel.unary_unary(
        f"/{SERVICE}/Echo", request_serializer=_identity, response_deserializer=_identity
    )
    answer: bytes = await call(text, timeout=10)
    return answer


async def test_one_connection_per_master_and_credential(server: tuple[str, TestPKI]) -> None:
    address, certs = server
    channels = [sdk_tls.aio_channel(address, certs.operator) for _ in range(20)]
    for i, ch in enumerate(channels):
        assert await _echo(ch, b"%d" % i) == b"%d" % i
    assert _connections(address) == 1
    other = sdk_tls.aio_channel(address, certs.agent)  # another principal: its own connection
    await _echo(other, b"x")
    assert _connections(address) == 2
    await other.close()
    for ch in channels[:-1]:
        await ch.close()
        await ch.close()  # twice is once
    assert await _echo(channels[-1], b"last") == b"last"  # the last user still has it
    await channels[-1].close()
    again = sdk_tls.aio_channel(address, certs.operator)  # a new one after all closed
    async with again:
        assert await _echo(again, b"new") == b"new"
