"""A service as a process: lead (or wait as a standby), open the records, start the service,
serve its HTTP API, and on SIGINT/SIGTERM (``stop``) stop it and leave its work running.

``serve(options, make)`` does it for any service: ``make(tls)`` builds the service's ``Hosted``
(its own policy) with the credential the process holds (towards the master, and to serve the
API with); the scaffold does the rest, in this order:

1. Leadership (``leadership.py``): the lock ``NAME.lock`` in ``--state``, or with ``zk`` an
   election in ZooKeeper. A ZooKeeper standby serves its API at once, answering every route
   but ``/v1/health`` and ``/metrics`` with 503 naming the leader's URL; a lock standby binds
   nothing until it leads. Held by another process and not ``standby``: ``StoreLocked``.
2. Once leading: the records (``NAME.db`` in ``--state``, or ZooKeeper's, fenced), then
   ``Hosted.start(records)`` (take back what it kept), then the API answers.
3. The ready file (``{"http", "url", "state", "leading"}`` and, once leading, what
   ``/v1/health`` shows; written again when a standby comes to lead) and a line on stderr.
4. On ``stop``: watches end (``STOPPING``), the API closes, ``Hosted.close()``, the records
   close, the leadership is given up (a ZooKeeper standby takes over at once). On a lost
   leadership the same, at once, and the exit status is ``LEADERSHIP_LOST`` (3) so that a
   supervisor starts the process again as a fresh contender.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Protocol

from aiohttp import web

from corral.frameworks.sdk import tls as sdk_tls
from corral.frameworks.service import http_api
from corral.frameworks.service.leadership import (
    DEFAULT_SESSION_TIMEOUT,
    LEADERSHIP_LOST,
    FileLeadership,
    Leadership,
    ZooKeeperLeadership,
)
from corral.frameworks.service.records import Records
from corral.frameworks.service.sqlite_records import Migration


@dataclass(frozen=True)
class Leading:
    """How a service's process comes to lead: every service's --standby, --zk,
    --zk-session-timeout and --advertise (cli/common.py reads them into one of these)."""

    standby: bool = False  # the lock held: wait for it rather than exit
    zk: str | None = None  # zk://HOSTS/PATH: elect the leader and keep the records there
    zk_session_timeout: float = DEFAULT_SESSION_TIMEOUT
    advertise: str = ""  # the URL standbys name as the leader's (default: the bound address)


ALONE: Final = Leading()  # no standby, no ZooKeeper: the lock, or exit 1


@dataclass(frozen=True)
class Options:
    name: str  # the service's name: NAME.lock, NAME.db, its log lines and metrics
    state_dir: Path
    listen: str
    ready_file: Path | None = None
    # Over TLS, the certificate role a caller needs (None: any certificate of the CA).
    require_role: str | None = "operator"
    migrate: Migration | None = None  # converts an older NAME.db (sqlite_records.py)
    leading: Leading = ALONE
    zk_store: str = ""  # the records' root in ZooKeeper (default PATH-store)


class Hosted(Protocol):
    """What a service gives the scaffold: its policy, over the records."""

    errors: Mapping[type[Exception], int]  # its exceptions as HTTP statuses

    def add_routes(self, app: web.Application) -> None:
        """Its routes (before it leads: requests reach them only once ``start`` returned)."""

    async def start(self, records: Records) -> None:
        """Lead: take back what the records hold."""

    async def close(self) -> None:
        """Stop acting; what runs keeps running for the next process."""

    def health(self) -> Mapping[str, Any]:
        """What ``/v1/health`` shows beside ``ok`` (once started)."""

    def describe(self) -> str:
        """For the start line: what it talks to and took back ("master M, 3 apps taken
        back")."""


MakeHosted = Callable[[sdk_tls.Credentials], Hosted]


def split_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host, int(port)


def leadership_of(options: Options) -> Leadership:
    lead = options.leading
    if lead.zk:
        return ZooKeeperLeadership(lead.zk, options.zk_store, lead.zk_session_timeout)
    return FileLeadership(options.state_dir, options.name, lead.standby, options.migrate)


async def serve(options: Options, make: MakeHosted, stop: asyncio.Event | None = None) -> int:
    """Run until ``stop`` is set: 0, or ``LEADERSHIP_LOST``. Raises ``StoreLocked`` (another
    process holds the store, and not ``standby``), ``StoreError``, ``ZooKeeperUnreachable`` or
    ``OSError`` (the address)."""
    stop = stop or asyncio.Event()
    tls = sdk_tls.resolve()  # its credential to the master serves its API too
    hosted = make(tls)
    leadership = leadership_of(options)
    await leadership.prepare()
    try:
        return await _lead(options, hosted, leadership, tls, stop)
    finally:
        await leadership.close()


class _Api:
    """The API's site and what the ready file says."""

    def __init__(self, options: Options, hosted: Hosted, tls: sdk_tls.Credentials) -> None:
        self.options = options
        self.secure = isinstance(tls, sdk_tls.TLS)
        self.tls = tls
        self.gate = http_api.Gate()
        self.app = http_api.build_api(
            options.name,
            errors=hosted.errors,
            require_role=options.require_role if self.secure else None,
            health=hosted.health,
            gate=self.gate,
        )
        hosted.add_routes(self.app)
        self.runner = web.AppRunner(self.app, access_log=None)
        self.url = ""
        self.address = ""

    async def start(self) -> None:
        await self.runner.setup()
        host, port = split_address(self.options.listen)
        try:
            ssl = self.tls.server_context() if isinstance(self.tls, sdk_tls.TLS) else None
            await web.TCPSite(self.runner, host, port, ssl_context=ssl).start()
        except OSError as exc:
            await self.runner.cleanup()
            raise OSError(
                f"cannot listen on {self.options.listen}: {exc.strerror or exc}"
            ) from None
        bound = self.runner.addresses[0][1] if self.runner.addresses else port
        self.address = f"{host}:{bound}"
        scheme = "https" if self.secure else "http"
        self.url = self.options.leading.advertise or f"{scheme}://{_advertised(host)}:{bound}"

    def ready(self, state: str, leading: bool, health: Mapping[str, Any] | None = None) -> None:
        if self.options.ready_file is not None:
            local = f"{'https' if self.secure else 'http'}://{self.address}"
            data = {**(health or {}), "http": self.address, "url": local, "state": state}
            write_ready(self.options.ready_file, {**data, "leading": leading})

    async def stop(self) -> None:
        self.app[http_api.STOPPING].set()
        await self.runner.cleanup()  # nothing when it never started


async def _lead(
    options: Options,
    hosted: Hosted,
    leadership: Leadership,
    tls: sdk_tls.Credentials,
    stop: asyncio.Event,
) -> int:
    api = _Api(options, hosted, tls)
    api.gate.leader = lambda: (leadership.leader() or {}).get("url")
    try:
        if leadership.binds_early:
            await api.start()
            info = {"url": api.url, "pid": os.getpid(), "host": socket.gethostname()}
            await leadership.join(info)
            api.ready("", leading=False)
        if not await leadership.acquire(stop, lambda why: say(f"standby: {why}")):
            return LEADERSHIP_LOST if leadership.lost.is_set() else 0
        records = await leadership.open_records()
        try:
            return await _act(options, hosted, leadership, api, records, stop)
        finally:
            records.close()
    finally:
        await api.stop()


async def _act(
    options: Options,
    hosted: Hosted,
    leadership: Leadership,
    api: _Api,
    records: Records,
    stop: asyncio.Event,
) -> int:
    await hosted.start(records)
    try:
        if not api.url:
            await api.start()
        api.gate.leading = True
        api.ready(records.describe(), leading=True, health=hosted.health())
        say(
            f"{options.name} service on {api.url} ({hosted.describe()}; store {records.describe()})"
        )
        waits = {asyncio.ensure_future(stop.wait()), asyncio.ensure_future(leadership.lost.wait())}
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()
        if leadership.lost.is_set():
            say(f"{options.name} service: leadership lost; stopping (exit {LEADERSHIP_LOST})")
            return LEADERSHIP_LOST
        return 0
    finally:
        api.gate.leading = False  # refuse every request from now on
        await hosted.close()
        if not leadership.lost.is_set():
            say(f"{options.name} service stopped; what it runs keeps running")


def _advertised(host: str) -> str:
    """The address others reach a wildcard listener at."""
    if host in ("", "0.0.0.0", "::"):
        return socket.gethostname()
    return host


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
