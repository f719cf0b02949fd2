"""``corral serving serve``: the serving service as a process. It takes the store's lock (or
waits for it as a standby), takes back every app of the store, serves the HTTP API, and on
SIGINT or SIGTERM stops its drivers and leaves every instance running for the next process."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
from pathlib import Path

import structlog
from aiohttp import web

from corral.frameworks.sdk import tls as sdk_tls
from corral.frameworks.serving import api
from corral.frameworks.serving.service import Service
from corral.frameworks.serving.store import Store
from corral.frameworks.serving.store_lock import StoreLock

log = structlog.get_logger("corral.serving")

DEFAULT_LISTEN = "127.0.0.1:5090"


def split_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host, int(port)


async def serve(
    state_dir: Path,
    master: str,
    listen: str = DEFAULT_LISTEN,
    *,
    failover_timeout: float,
    standby: bool = False,
    ready_file: Path | None = None,
    stop: asyncio.Event | None = None,
) -> int:
    """Run until ``stop`` is set (SIGINT/SIGTERM set it). Raises ``StoreLocked`` (another
    service holds the store, and not ``standby``), ``StoreError`` or ``OSError`` (the address)."""
    state_dir.mkdir(parents=True, exist_ok=True)
    stop = stop or asyncio.Event()
    lock = StoreLock(state_dir)
    if standby and not lock.try_acquire():
        _say(f"standby: {lock.path} is held by pid {lock.holder()}; taking over when it is free")
        waiting = asyncio.ensure_future(lock.wait())
        stopping = asyncio.ensure_future(stop.wait())
        await asyncio.wait({waiting, stopping}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if not waiting.done():
            waiting.cancel()
            return 0
    elif not standby:
        lock.acquire()
    try:
        store = Store(state_dir)
        try:
            return await _serve(store, master, listen, failover_timeout, ready_file, stop)
        finally:
            store.close()
    finally:
        lock.release()


async def _serve(
    store: Store,
    master: str,
    listen: str,
    failover_timeout: float,
    ready_file: Path | None,
    stop: asyncio.Event,
) -> int:
    tls = sdk_tls.resolve()  # its credential to the master serves its API too
    service = Service(store, master, failover_timeout)
    await service.start()
    secure = isinstance(tls, sdk_tls.TLS)
    app = api.build_app(service, require_role=api.CLIENT_ROLE if secure else None)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    host, port = split_address(listen)
    try:
        ssl = tls.server_context() if isinstance(tls, sdk_tls.TLS) else None
        await web.TCPSite(runner, host, port, ssl_context=ssl).start()
    except OSError as exc:
        await runner.cleanup()
        await service.close()
        raise OSError(f"cannot listen on {listen}: {exc.strerror or exc}") from None
    bound = runner.addresses[0][1] if runner.addresses else port
    address = f"{host}:{bound}"
    url = f"{'https' if secure else 'http'}://{address}"
    if ready_file is not None:
        tmp = ready_file.with_suffix(".tmp")
        tmp.write_text(json.dumps({"http": address, "url": url, "state": str(store.path)}))
        tmp.replace(ready_file)
    apps = len(service.runners)
    _say(
        f"serving service on {url}/v1/apps (master {master}, store {store.path}, "
        f"{apps} app{'s' if apps != 1 else ''} taken back)"
    )
    try:
        await stop.wait()
    finally:
        app[api.STOPPING].set()
        await runner.cleanup()
        await service.close()
    _say("serving service stopped; the apps' instances keep running")
    return 0


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


async def main(
    state_dir: Path,
    master: str,
    listen: str,
    failover_timeout: float,
    standby: bool,
    ready_file: Path | None,
) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    return await serve(
        state_dir,
        master,
        listen,
        failover_timeout=failover_timeout,
        standby=standby,
        ready_file=ready_file,
        stop=stop,
    )
