"""The Mesos API's listener (``corral master --mesos-api ADDR``): an HTTP server of its own
beside the master's gRPC and HTTP ports, serving Mesos' v1 scheduler API and the read-only
endpoints Mesos tools use (``/version``, ``/health``, ``/master/state``).

TLS with the master's certificate unless ``--mesos-api-plaintext`` (pymesos and many Mesos
clients speak only plain HTTP), which is logged as a warning, as ``--insecure`` is. Callers
authenticate with HTTP Basic against ``--mesos-credentials FILE``; a listener without
credentials must be opened explicitly (``--mesos-api-open``: every caller is anonymous). Neither
given: the master refuses to start (the CLI checks; ``start`` refuses too).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from corral.limits import MAX_MESSAGE_BYTES
from corral.logging import get_logger
from corral.master import views
from corral.master.http import json_stream
from corral.master.mesos_api import state as mesos_state
from corral.master.mesos_api.credentials import Credentials
from corral.master.mesos_api.scheduler import MesosScheduler
from corral.master.mesos_api.wire import MESOS_VERSION
from corral.master.runtime import MasterRuntime
from corral.master.security.tls import ServerTLS
from corral.v1 import operator_pb2

log = get_logger("corral.master.mesos")


@dataclass(frozen=True, slots=True)
class MesosApiOptions:
    address: str  # HOST:PORT to listen on (port 0: any free one)
    credentials: Credentials | None  # None: open (only with ``open``)
    open: bool = False  # explicitly no authentication
    plaintext: bool = False  # explicitly no TLS


class MesosApiError(ValueError):
    """The options cannot make a safe listener (the message says which flag is missing)."""


def check(options: MesosApiOptions, tls: bool) -> None:
    """MesosApiError unless ``options`` are safe on a master with (``tls``) or without TLS."""
    if options.credentials is None and not options.open:
        raise MesosApiError(
            "--mesos-api needs --mesos-credentials FILE (HTTP Basic, Mesos' format), or "
            "--mesos-api-open to serve it without authentication"
        )
    if options.credentials is not None and options.open:
        raise MesosApiError("--mesos-api-open and --mesos-credentials exclude each other")
    if not tls and not options.plaintext:
        raise MesosApiError(
            "the master is --insecure, so the Mesos API has no certificate to serve TLS with; "
            "add --mesos-api-plaintext"
        )


@dataclass
class RunningMesosApi:
    runner: web.AppRunner
    address: str
    scheduler: MesosScheduler

    async def stop(self) -> None:
        await self.runner.cleanup()


def _master_info(runtime: MasterRuntime, host: str, port: int) -> dict[str, Any]:
    hostname = host if host not in ("", "0.0.0.0", "::") else socket.gethostname()
    info: dict[str, Any] = {
        "id": runtime.master_id,
        "hostname": hostname,
        "port": port,
        "version": MESOS_VERSION,
        "address": {"hostname": hostname, "port": port},
    }
    try:
        ip = ipaddress.IPv4Address(socket.gethostbyname(hostname))
    except (OSError, ValueError):
        return info
    # MasterInfo.ip is the address in network byte order read as a host (x86: little-endian)
    # integer, as Mesos writes it.
    info["ip"] = int.from_bytes(ip.packed, "little")
    info["address"]["ip"] = str(ip)
    return info


async def start(
    runtime: MasterRuntime,
    options: MesosApiOptions,
    tls: ServerTLS | None,
    middlewares: Sequence[Any] = (),
) -> RunningMesosApi:
    """Listen; OSError if the address cannot be had, MesosApiError for unsafe options.
    ``middlewares``: a standby's redirect to the leader (master/ha/leader_gate.py)."""
    check(options, tls is not None)
    host, _, port_text = options.address.rpartition(":")
    app = web.Application(client_max_size=MAX_MESSAGE_BYTES, middlewares=list(middlewares))
    scheduler = MesosScheduler(runtime, options.credentials, {})
    credentials = options.credentials

    async def version(_request: web.Request) -> web.Response:
        return web.json_response(
            {"version": MESOS_VERSION, "build_date": "", "build_user": "", "git_sha": ""}
        )

    async def health(_request: web.Request) -> web.Response:
        return web.Response(status=200)

    async def master_state(request: web.Request) -> web.StreamResponse:
        # Read-only endpoints authenticate as Mesos' --authenticate_http_readonly does.
        if credentials is not None and (
            credentials.principal_of(request.headers.get("Authorization")) is None
        ):
            return web.Response(
                status=401,
                text="valid HTTP Basic credentials are required",
                headers={"WWW-Authenticate": 'Basic realm="mesos"'},
            )
        # The core makes only what changed since the last call (views.state_wire); the parse
        # of a few MB is the event loop's, not the core's.
        s = operator_pb2.State.FromString(await runtime.query(views.state_wire))
        info = scheduler.master_info
        # Its agents ("slaves") run to tens of MB at 50,000: written a piece at a time.
        return await json_stream.write_json(
            request,
            mesos_state.state(s, str(info["hostname"]), f"{info['hostname']}:{info['port']}"),
        )

    app.router.add_post("/api/v1/scheduler", scheduler.handle)
    app.router.add_get("/version", version)
    app.router.add_get("/health", health)
    app.router.add_get("/master/health", health)
    for path in ("/master/state", "/master/state.json", "/state", "/state.json"):
        app.router.add_get(path, master_state)
    # A disconnected framework's SUBSCRIBE handler is cancelled at once, so the core hears of
    # the disconnection then, not at the next write.
    runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
    await runner.setup()
    site = web.TCPSite(
        runner,
        host,
        int(port_text),
        ssl_context=None if options.plaintext or tls is None else tls.http_context(),
    )
    try:
        await site.start()
    except OSError as exc:
        await runner.cleanup()
        raise OSError(
            f"cannot listen for the Mesos API on {options.address}: {exc.strerror or exc}"
        ) from None
    bound = runner.addresses[0][1] if runner.addresses else int(port_text)
    scheduler.master_info.update(_master_info(runtime, host, bound))
    if options.plaintext:
        log.warning(
            "mesos_api_plaintext",
            detail="--mesos-api-plaintext: the Mesos API's credentials and calls cross the "
            "network in clear text",
        )
    if options.open:
        log.warning(
            "mesos_api_open",
            detail="--mesos-api-open: anyone who reaches the Mesos API is an anonymous framework",
        )
    address = f"{host}:{bound}"
    log.info(
        "mesos_api_started",
        address=address,
        tls=not options.plaintext,
        principals=len(credentials) if credentials is not None else 0,
    )
    return RunningMesosApi(runner, address, scheduler)
