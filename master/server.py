"""Assembles a master process: runtime, gRPC server and HTTP server on the given addresses."""

from __future__ import annotations

import asyncio
import gc
import json
import signal
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from aiohttp import web

from corral import acl as acls
from corral.acl import Acl
from corral.gc_tuning import MASTER, tune_gc
from corral.limits import MAX_MESSAGE_BYTES
from corral.logging import get_logger
from corral.master.allocator import AllocatorOptions, make_allocator
from corral.master.core.config import MasterConfig
from corral.master.http.routes import HTTP_READ_TIMEOUT, build_app
from corral.master.mesos_api import server as mesos_api
from corral.master.registry import Registry, SqliteRegistry, open_registry
from corral.master.rpc.services import add_servicers
from corral.master.runtime import MasterRuntime
from corral.master.security.acl_file import watch as acl_file_watch
from corral.master.security.http_auth import add_login, auth_middleware
from corral.master.security.tls import ServerTLS

log = get_logger("corral.master")

GRPC_OPTIONS = [
    # One limit for every peer: what the master accepts always fits what agents and the SDK
    # accept in turn; a larger message is refused by gRPC itself with RESOURCE_EXHAUSTED.
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.keepalive_time_ms", 20_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.http2.min_ping_interval_without_data_ms", 5_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
    # Agents and frameworks ping every 60 s even on an idle stream; without these the server
    # counts such pings as abuse after its 5-minute default and closes the connection.
    ("grpc.http2.min_recv_ping_interval_without_data_ms", 10_000),
    ("grpc.http2.max_ping_strikes", 0),
    # gRPC sets SO_REUSEPORT by default: a second master on a busy port would "start" and share
    # the agents with the first. A busy port must be an error.
    ("grpc.so_reuseport", 0),
]


@dataclass
class RunningMaster:
    runtime: MasterRuntime
    grpc_server: grpc.aio.Server
    http_runner: web.AppRunner
    grpc_address: str
    http_address: str
    tls: bool = True  # False: plain text (--insecure)
    acl_watch: asyncio.Task[None] | None = None  # reloads --acls when it changes
    mesos: mesos_api.RunningMesosApi | None = None  # --mesos-api (docs/mesos-compat.md)

    async def stop(self) -> None:
        if self.acl_watch is not None:
            self.acl_watch.cancel()
            await asyncio.gather(self.acl_watch, return_exceptions=True)
        if self.mesos is not None:
            await self.mesos.stop()
        await self.runtime.stop()
        await self.grpc_server.stop(grace=1.0)
        await self.http_runner.cleanup()


class _TLSSite(web.TCPSite):
    """aiohttp's TCPSite with the TLS handshake bounded as a request's head is: a client that
    connects and never finishes its handshake would otherwise hold the socket for asyncio's
    default of 60 s (issue 17's half-sent requests, one layer down)."""

    def __init__(
        self,
        runner: web.AppRunner,
        host: str,
        port: int,
        ssl_context: ssl.SSLContext,
        handshake_timeout: float,
    ) -> None:
        super().__init__(runner, host, port, ssl_context=ssl_context)
        self._handshake_timeout = handshake_timeout

    async def start(self) -> None:
        # TCPSite.start without its create_server call, which passes no handshake timeout.
        await web.BaseSite.start(self)
        server = self._runner.server
        assert server is not None
        self._server = await asyncio.get_running_loop().create_server(
            server,
            self._host,
            self._port,
            ssl=self._ssl_context,
            backlog=self._backlog,
            ssl_handshake_timeout=self._handshake_timeout,
        )
        if self._server.sockets:
            self._bound_port = self._server.sockets[0].getsockname()[1]


def _split(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host, int(port)


async def start_master(
    config: MasterConfig,
    grpc_address: str,
    http_address: str,
    allocator: str = "numba",
    seed: int | None = None,
    http_read_timeout: float = HTTP_READ_TIMEOUT,
    allocator_options: AllocatorOptions | None = None,
    registry: Registry | None = None,
    *,
    lead: bool = True,
    interceptors: Sequence[grpc.aio.ServerInterceptor] = (),
    http_middlewares: Sequence[Any] = (),
    tls: ServerTLS | None,
    acl: Acl | None = None,
    acl_file: Path | None = None,
    mesos: mesos_api.MesosApiOptions | None = None,
    mesos_middlewares: Sequence[Any] = (),
) -> RunningMaster:
    """Start a master; raises OSError if an address cannot be had, RegistryError if the
    registry cannot be read. With ``lead`` False the servers listen but the runtime waits for
    ``runtime.start`` (a standby of a highly available master, master/ha/candidate.py). ``tls``
    None is
    plain text (``--insecure``); otherwise both ports are TLS and gRPC requires a client
    certificate. ``acl`` is what principals may do (None: corral.acl's builtin grants;
    ignored in plain text), read again from ``acl_file`` whenever it changes. ``mesos``: also
    serve Mesos' v1 scheduler API (master/mesos_api)."""
    if mesos is not None:
        mesos_api.check(mesos, tls is not None)  # before anything listens
    runtime = MasterRuntime(
        config,
        make_allocator(allocator, options=allocator_options),
        seed=seed,
        registry=registry,
        acl=None if tls is None else (acl or acls.builtin()),
    )
    if tls is not None:
        runtime.token_key = tls.token_key
    server = grpc.aio.server(options=GRPC_OPTIONS, interceptors=list(interceptors) or None)
    add_servicers(runtime, server)
    try:
        if tls is None:
            port = server.add_insecure_port(grpc_address)
        else:
            port = server.add_secure_port(grpc_address, tls.grpc_credentials())
    except RuntimeError as exc:  # grpc's way of saying the address is taken or invalid
        raise OSError(f"cannot listen for gRPC on {grpc_address}: {exc}") from None
    if port == 0:
        raise OSError(f"cannot listen for gRPC on {grpc_address}")
    grpc_host, _ = _split(grpc_address)
    if lead:
        # The registry first: a registry that cannot be read stops here.
        runtime.start(await runtime.read_registry())
    await server.start()
    # aiohttp has no header-read timeout of its own; its keep-alive timer does the job. It is
    # armed when a connection opens (aiohttp >= 3.14.5) and after every response, incoming
    # bytes do not reset it, and it closes the connection when it fires while no whole request
    # has arrived; a request being handled is never cut. lingering_time bounds draining a body
    # no handler read (only the roles PUTs read theirs).
    app = build_app(runtime)
    app.middlewares.extend(http_middlewares)  # a standby's redirect to the leader goes first
    if tls is not None:
        add_login(app, runtime)
        app.middlewares.append(auth_middleware(runtime))
    runner = web.AppRunner(
        app,
        access_log=None,
        keepalive_timeout=http_read_timeout,
        lingering_time=http_read_timeout,
    )
    await runner.setup()
    http_host, http_port = _split(http_address)
    site: web.TCPSite
    if tls is None:
        site = web.TCPSite(runner, http_host, http_port)
    else:
        site = _TLSSite(runner, http_host, http_port, tls.http_context(), http_read_timeout)
    try:
        await site.start()
    except OSError as exc:
        # Undo what started, so the process ends cleanly with one line, not a traceback.
        await runner.cleanup()
        await server.stop(grace=None)
        await runtime.stop()
        raise OSError(f"cannot listen for HTTP on {http_address}: {exc.strerror or exc}") from None
    bound = runner.addresses[0][1] if runner.addresses else http_port
    running = RunningMaster(
        runtime, server, runner, f"{grpc_host}:{port}", f"{http_host}:{bound}", tls is not None
    )
    if mesos is not None:
        try:
            running.mesos = await mesos_api.start(runtime, mesos, tls, mesos_middlewares)
        except OSError:
            await runner.cleanup()
            await server.stop(grace=None)
            await runtime.stop()
            raise
    log.info(
        "master_started",
        master_id=runtime.master_id,
        grpc=running.grpc_address,
        http=running.http_address,
        allocator=allocator,
        registry=runtime.registry.describe(),
        tls=tls.source if tls is not None else "off (--insecure)",
        acls=runtime.acl.describe(),
    )
    if acl_file is not None and tls is not None:
        running.acl_watch = asyncio.create_task(acl_file_watch(runtime, acl_file))
    return running


def write_ready_file(path: Path | None, master: RunningMaster, **extra: str) -> None:
    """Tell whoever waits (tests, the load test) where the master listens."""
    if path is None:
        return
    tmp = path.with_suffix(".tmp")
    tmp.write_text(
        json.dumps(
            {
                "grpc": master.grpc_address,
                "http": master.http_address,
                "master_id": master.runtime.master_id,
                "tls": master.tls,
                **({"mesos": master.mesos.address} if master.mesos is not None else {}),
                **extra,
            }
        )
    )
    tmp.replace(path)


async def serve_forever(
    config: MasterConfig,
    grpc_address: str,
    http_address: str,
    allocator: str,
    ready_file: Path | None,
    allocator_options: AllocatorOptions | None = None,
    work_dir: Path | None = None,
    accept_empty_registry: bool = False,
    tls: ServerTLS | None = None,
    acl: Acl | None = None,
    acl_file: Path | None = None,
    mesos: mesos_api.MesosApiOptions | None = None,
) -> int:
    """Serve until SIGINT or SIGTERM (0), or until a loop of the runtime died (1)."""
    # Collect young objects less often (see gc_tuning), and move what exists at start-up out of
    # the collector's way.
    tune_gc(MASTER)
    registry = open_registry(work_dir, accept_empty=accept_empty_registry)
    if isinstance(registry, SqliteRegistry) and registry.lost is not None:
        log.warning(
            "registry_lost_started_empty",
            registry=registry.describe(),
            lost=registry.lost.describe(),
            reason="--accept-empty-registry: every agent and framework it admitted is forgotten",
        )
    try:
        master = await start_master(
            config,
            grpc_address,
            http_address,
            allocator,
            allocator_options=allocator_options,
            registry=registry,
            tls=tls,
            acl=acl,
            acl_file=acl_file,
            mesos=mesos,
        )
    except BaseException:
        registry.close()
        raise
    gc.freeze()
    write_ready_file(ready_file, master)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    stopped = asyncio.create_task(stop.wait())
    died = asyncio.create_task(master.runtime.died.wait())
    await asyncio.wait((stopped, died), return_when=asyncio.FIRST_COMPLETED)
    stopped.cancel()
    died.cancel()
    if master.runtime.died.is_set():
        # A dead loop is a bug (logged as background_task_failed): stop and exit non-zero so
        # whatever supervises the process starts a whole master again.
        log.error("master_failed", reason=master.runtime.death)
        await master.stop()
        registry.close()
        return 1
    log.info("master_stopping")
    await master.stop()
    registry.close()
    return 0
