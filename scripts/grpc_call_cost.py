"""What a gRPC call costs the server, unary against a message on a stream (grpc.aio).

    python scripts/grpc_call_cost.py [--calls 20000] [--size 100] [--tls]

Starts a bare grpc.aio server in a child process (handlers that do nothing), sends it
``--calls`` unary calls (100 in flight), then the same number of messages on one client
stream, then as many on 100 bidirectional streams, each message answered by one (the shape of
the agents' Connect stream), then as many round trips spread over 50 connections with pauses
(many peers with little to say each), and prints the server's CPU time (user + system,
psutil) per call or message. With ``--tls`` both sides use mutual TLS (a CA made for the run,
as a master's port does; docs/security.md): the cost of TLS per message. The measurement
behind the Scheduler's CALLS stream (docs/performance-history.md, fourth round), the cost of a
message on the master's agent streams (issue #18, fifth round) and of TLS (issue #33).
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import sys
from collections.abc import AsyncIterator

import grpc
import psutil

SERVICE = "bench.Calls"


def _identity(b: bytes) -> bytes:
    return b


# (ca, server key, server cert, client key, client cert) PEMs when --tls; None: plain text.
Certs = tuple[bytes, bytes, bytes, bytes, bytes] | None


def _certs() -> Certs:
    from corral import pki

    ca = pki.make_ca()
    server = pki.issue(ca, "master", pki.MASTER_ROLE, hosts=["127.0.0.1"])
    client = pki.issue(ca, "bench", "operator")
    return (ca.cert, server.key, server.cert, client.key, client.cert)


def _channel(address: str, certs: Certs, own: bool = False) -> grpc.aio.Channel:
    """``own``: a connection of its own (gRPC shares one among plain-text channels)."""
    options = [("grpc.use_local_subchannel_pool", 1)] if own else []
    if certs is None:
        return grpc.aio.insecure_channel(address, options=options)
    creds = grpc.ssl_channel_credentials(certs[0], certs[3], certs[4])
    return grpc.aio.secure_channel(
        address, creds, options=[*options, ("grpc.ssl_target_name_override", "master.corral")]
    )


def _serve(port_out: multiprocessing.connection.Connection, certs: Certs) -> None:
    async def unary(request: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
        return b""

    async def stream(
        requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext[bytes, bytes]
    ) -> bytes:
        n = 0
        async for _ in requests:
            n += 1
        return str(n).encode()

    async def bidi(
        requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext[bytes, bytes]
    ) -> AsyncIterator[bytes]:
        async for _ in requests:
            yield b"ack"

    async def main() -> None:
        server = grpc.aio.server()
        handlers = {
            "Unary": grpc.unary_unary_rpc_method_handler(unary, _identity, _identity),
            "Stream": grpc.stream_unary_rpc_method_handler(stream, _identity, _identity),
            "Bidi": grpc.stream_stream_rpc_method_handler(bidi, _identity, _identity),
        }
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
        if certs is None:
            port = server.add_insecure_port("127.0.0.1:0")
        else:
            creds = grpc.ssl_server_credentials(
                [(certs[1], certs[2])], root_certificates=certs[0], require_client_auth=True
            )
            port = server.add_secure_port("127.0.0.1:0", creds)
        await server.start()
        port_out.send(port)
        await server.wait_for_termination()

    asyncio.run(main())


async def _unary_calls(address: str, calls: int, payload: bytes, certs: Certs) -> None:
    async with _channel(address, certs) as channel:
        call = channel.unary_unary(
            f"/{SERVICE}/Unary", request_serializer=_identity, response_deserializer=_identity
        )
        in_flight = asyncio.Semaphore(100)

        async def one() -> None:
            async with in_flight:
                await call(payload)

        await asyncio.gather(*(one() for _ in range(calls)))


async def _stream_messages(address: str, calls: int, payload: bytes, certs: Certs) -> None:
    async with _channel(address, certs) as channel:
        call = channel.stream_unary(
            f"/{SERVICE}/Stream", request_serializer=_identity, response_deserializer=_identity
        )

        async def messages() -> AsyncIterator[bytes]:
            for _ in range(calls):
                yield payload

        await call(messages())


async def _bidi_round_trips(address: str, calls: int, payload: bytes, certs: Certs) -> None:
    streams = 100
    async with _channel(address, certs) as channel:
        connect = channel.stream_stream(
            f"/{SERVICE}/Bidi", request_serializer=_identity, response_deserializer=_identity
        )

        async def one(n: int) -> None:
            call = connect()
            for _ in range(n):
                await call.write(payload)
                await call.read()
            await call.done_writing()

        share, extra = divmod(calls, streams)
        await asyncio.gather(*(one(share + (i < extra)) for i in range(streams)))


async def _sparse_round_trips(address: str, calls: int, payload: bytes, certs: Certs) -> None:
    """50 connections of one stream each, 2 ms between round trips: many peers with little to
    say each (a master's agents and frameworks), where the cost is per read and write."""
    connections = 50
    channels = [_channel(address, certs, own=True) for _ in range(connections)]

    async def one(channel: grpc.aio.Channel, n: int) -> None:
        connect = channel.stream_stream(
            f"/{SERVICE}/Bidi", request_serializer=_identity, response_deserializer=_identity
        )
        call = connect()
        for _ in range(n):
            await call.write(payload)
            await call.read()
            await asyncio.sleep(0.002)
        await call.done_writing()

    share, extra = divmod(calls, connections)
    await asyncio.gather(*(one(ch, share + (i < extra)) for i, ch in enumerate(channels)))
    for channel in channels:
        await channel.close()


def _cpu(proc: psutil.Process) -> float:
    t = proc.cpu_times()
    return float(t.user + t.system)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=20_000)
    p.add_argument("--size", type=int, default=100, help="request bytes")
    p.add_argument("--tls", action="store_true", help="mutual TLS on both sides")
    args = p.parse_args(argv)
    if args.calls < 1 or args.size < 0:
        p.error("--calls must be >= 1 and --size >= 0")
    certs = _certs() if args.tls else None
    receive, send = multiprocessing.Pipe(duplex=False)
    child = multiprocessing.Process(target=_serve, args=(send, certs), daemon=True)
    child.start()
    try:
        address = f"127.0.0.1:{receive.recv()}"
        server = psutil.Process(child.pid)
        payload = b"x" * args.size
        runs = (
            ("unary call", _unary_calls),
            ("stream message", _stream_messages),
            ("bidi round trip", _bidi_round_trips),
            ("50 connections", _sparse_round_trips),
        )
        for name, run in runs:
            before = _cpu(server)
            asyncio.run(run(address, args.calls, payload, certs))
            per = (_cpu(server) - before) / args.calls * 1e6
            mode = "TLS" if certs else "plain"
            each = f"({args.calls:,} of {args.size} B, {mode})"
            print(f"{name:16s} {per:7.1f} µs of server CPU each {each}")
    finally:
        child.terminate()
        child.join(5)
    return 0


if __name__ == "__main__":
    sys.exit(main())
