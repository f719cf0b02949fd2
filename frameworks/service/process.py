"""A service as a process: lead (or wait as a standby), open the records, start the service,
serve its HTTP API, and on SIGINT/SIGTERM (``stop``) stop it and leave its work running.

``serve(options, make)`` does it for any service: ``make(records, tls)`` builds the service's
``Hosted`` (its own policy) from the records and the credential the process holds (towards the
master, and to serve the API with); the scaffold does the rest, in this order:

1. Leadership: ``NAME.lock`` in ``--state`` (``store_lock.py``). Held by another process: exit
   (``StoreLocked``), or with ``standby`` wait until it is free.
2. The records (``NAME.db`` in ``--state``), then ``Hosted.start()`` (take back what it kept).
3. The HTTP API on ``--listen`` over TLS (the process's own certificate; clients present
   theirs), the ready file (``{"http", "url", "state"}``), a line on stderr.
4. On ``stop``: watches end (``STOPPING``), the API closes, ``Hosted.close()``, the records
   close, the lock is released.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from aiohttp import web

from corral.frameworks.sdk import tls as sdk_tls
from corral.frameworks.service import http_api
from corral.frameworks.service.records import Records
from corral.frameworks.service.sqlite_records import Migration, SqliteRecords
from corral.frameworks.service.store_lock import StoreLock


@dataclass(frozen=True)
class Options:
    name: str  # the service's name: NAME.lock, NAME.db, its log lines and metrics
    state_dir: Path
    listen: str
    standby: bool = False
    ready_file: Path | None = None
    # Over TLS, the certificate role a caller needs (None: any certificate of the CA).
    require_role: str | None = "operator"
    migrate: Migration | None = None  # converts an older NAME.db (sqlite_records.py)


class Hosted(Protocol):
    """What a service gives the scaffold: its policy, over the records."""

    errors: Mapping[type[Exception], int]  # its exceptions as HTTP statuses

    async def start(self) -> None:
        """Take back what the records hold."""

    async def close(self) -> None:
        """Stop acting; what runs keeps running for the next process."""

    def add_routes(self, app: web.Application) -> None: ...

    def health(self) -> Mapping[str, Any]:
        """What ``/v1/health`` shows beside ``ok``."""

    def describe(self) -> str:
        """For the start line: what it talks to and took back ("master M, 3 apps taken
        back")."""


MakeHosted = Callable[[Records, sdk_tls.Credentials], Hosted]


def split_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host, int(port)


async def serve(options: Options, make: MakeHosted, stop: asyncio.Event | None = None) -> int:
    """Run until ``stop`` is set. Raises ``StoreLocked`` (another process holds the store, and
    not ``standby``), ``StoreError`` or ``OSError`` (the address)."""
    options.state_dir.mkdir(parents=True, exist_ok=True)
    stop = stop or asyncio.Event()
    lock = StoreLock(options.state_dir, options.name)
    if options.standby and not lock.try_acquire():
        say(f"standby: {lock.path} is held by pid {lock.holder()}; taking over when it is free")
        waiting = asyncio.ensure_future(lock.wait())
        stopping = asyncio.ensure_future(stop.wait())
        await asyncio.wait({waiting, stopping}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if not waiting.done():
            waiting.cancel()
            return 0
    elif not options.standby:
        lock.acquire()
    try:
        db = options.state_dir / f"{options.name}.db"
        records = Records(SqliteRecords(db, migrate=options.migrate))
        try:
            return await _serve(options, records, make, stop)
        finally:
            records.close()
    finally:
        lock.release()


async def _serve(options: Options, records: Records, make: MakeHosted, stop: asyncio.Event) -> int:
    tls = sdk_tls.resolve()  # its credential to the master serves its API too
    hosted = make(records, tls)
    await hosted.start()
    secure = isinstance(tls, sdk_tls.TLS)
    app = http_api.build_api(
        options.name,
        errors=hosted.errors,
        require_role=options.require_role if secure else None,
        health=hosted.health,
    )
    hosted.add_routes(app)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    host, port = split_address(options.listen)
    try:
        ssl = tls.server_context() if isinstance(tls, sdk_tls.TLS) else None
        await web.TCPSite(runner, host, port, ssl_context=ssl).start()
    except OSError as exc:
        await runner.cleanup()
        await hosted.close()
        raise OSError(f"cannot listen on {options.listen}: {exc.strerror or exc}") from None
    bound = runner.addresses[0][1] if runner.addresses else port
    address = f"{host}:{bound}"
    url = f"{'https' if secure else 'http'}://{address}"
    if options.ready_file is not None:
        write_ready(options.ready_file, {"http": address, "url": url, "state": records.describe()})
    say(f"{options.name} service on {url} ({hosted.describe()}; store {records.describe()})")
    try:
        await stop.wait()
    finally:
        app[http_api.STOPPING].set()
        await runner.cleanup()
        await hosted.close()
    say(f"{options.name} service stopped; what it runs keeps running")
    return 0


def write_ready(path: Path, data: Mapping[str, Any]) -> None:
    """``data`` as JSON in ``path``, whole or not at all (a reader never sees half)."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data))
    tmp.replace(path)


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


async def main(options: Options, make: MakeHosted) -> int:
    """``serve`` until SIGINT or SIGTERM."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    return await serve(options, make, stop)
