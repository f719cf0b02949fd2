"""``corral serving serve``: the serving service as a process, on the services scaffold
(``corral.frameworks.service.process``): it leads (or waits as a standby), takes back every
app of the store, serves the HTTP API (api.py), and on SIGINT or SIGTERM stops its drivers and
leaves every instance running for the next process."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aiohttp import web

from corral.frameworks.sdk import tls as sdk_tls
from corral.frameworks.service import process
from corral.frameworks.service.records import Records
from corral.frameworks.serving import api
from corral.frameworks.serving.app import AppError
from corral.frameworks.serving.service import Service, UnknownApp
from corral.frameworks.serving.store import Store, migrate_tables

NAME = "serving"
DEFAULT_LISTEN = "127.0.0.1:5090"
# Over TLS, who may call the API: a certificate of the cluster's CA with this role.
CLIENT_ROLE = "operator"


class Hosted:
    """The serving service as the scaffold hosts it."""

    errors: Mapping[type[Exception], int] = {AppError: 400, UnknownApp: 404}

    def __init__(self, service: Service) -> None:
        self.service = service

    async def start(self) -> None:
        await self.service.start()

    async def close(self) -> None:
        await self.service.close()

    def add_routes(self, app: web.Application) -> None:
        api.add_routes(app, self.service)

    def health(self) -> Mapping[str, Any]:
        return {"master": self.service.master, "apps": len(self.service.apps())}

    def describe(self) -> str:
        n = len(self.service.runners)
        return f"master {self.service.master}, {n} app{'s' if n != 1 else ''} taken back"


def options(
    state_dir: Path, listen: str, standby: bool = False, ready_file: Path | None = None
) -> process.Options:
    return process.Options(
        NAME,
        state_dir,
        listen,
        standby=standby,
        ready_file=ready_file,
        require_role=CLIENT_ROLE,
        migrate=migrate_tables,
    )


def hosting(master: str, failover_timeout: float) -> process.MakeHosted:
    def make(records: Records, tls: sdk_tls.Credentials) -> Hosted:
        return Hosted(Service(Store(records), master, failover_timeout))

    return make


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
    """Run until ``stop`` is set (process.serve)."""
    return await process.serve(
        options(state_dir, listen, standby, ready_file), hosting(master, failover_timeout), stop
    )


async def main(
    state_dir: Path,
    master: str,
    listen: str,
    failover_timeout: float,
    standby: bool,
    ready_file: Path | None,
) -> int:
    return await process.main(
        options(state_dir, listen, standby, ready_file), hosting(master, failover_timeout)
    )
