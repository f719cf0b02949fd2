"""``corral serving serve``: the serving service as a process, on the services scaffold
(``corral.frameworks.service.process``): it leads (or waits as a standby), takes back every
app of the store, serves the HTTP API (api.py), and on SIGINT or SIGTERM stops its drivers and
leaves every instance running for the next process."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

from corral.frameworks import sdk
from corral.frameworks.sdk import tls as sdk_tls
from corral.frameworks.service import process
from corral.frameworks.service.process import ALONE, Leading
from corral.frameworks.service.records import Records
from corral.frameworks.service.tenancy import Tenancy
from corral.frameworks.serving import api
from corral.frameworks.serving.app import AppError
from corral.frameworks.serving.dns import DnsServer
from corral.frameworks.serving.dns_names import DEFAULT_DOMAIN, DEFAULT_TTL
from corral.frameworks.serving.service import Service, UnknownApp
from corral.frameworks.serving.store import Store, migrate_tables

NAME = "serving"
DEFAULT_LISTEN = "127.0.0.1:5090"
# Over TLS, who may call the API: any certificate of the cluster's CA (the TLS handshake
# refuses others); what each caller may do to which app is the master's to say (tenancy.py).
CLIENT_ROLE = None


@dataclass(frozen=True)
class DnsOptions:
    """``--dns``: where the DNS server listens, its domain, TTL and upstream (dns.py)."""

    listen: str
    domain: str = DEFAULT_DOMAIN
    ttl: int = DEFAULT_TTL
    forward: tuple[str, int] | None = None


class Hosted:
    """The serving service as the scaffold hosts it: a ``Service`` over the records, made
    when this process comes to lead."""

    errors: Mapping[type[Exception], int] = {AppError: 400, UnknownApp: 404}

    def __init__(
        self,
        master: str,
        failover_timeout: float,
        dns: DnsOptions | None = None,
        tls: sdk_tls.Credentials | None = None,
    ) -> None:
        self.master = master
        self.tls = tls
        self.failover_timeout = failover_timeout
        self.dns_options = dns
        self.service: Service | None = None
        self.dns: DnsServer | None = None

    def current(self) -> Service:
        assert self.service is not None, "the scaffold routes requests only once started"
        return self.service

    def add_routes(self, app: web.Application) -> None:
        api.add_routes(app, self.current)

    async def start(self, records: Records) -> None:
        # Over TLS the master decides for the apps' owners (tenancy.py); in plain text nobody
        # can be told apart.
        secure = isinstance(self.tls, sdk_tls.TLS)
        tenancy = Tenancy(sdk.Reviewer(self.master, self.tls) if secure else None)
        self.service = Service(Store(records), self.master, self.failover_timeout, tenancy)
        await self.service.start()
        o = self.dns_options
        if o is not None:
            self.dns = DnsServer(self.service.dns_view, o.domain, o.ttl, o.forward)
            try:
                await self.dns.start(o.listen)
            except OSError as exc:
                await self.service.close()
                why = exc.strerror or exc
                raise OSError(f"cannot serve DNS on {o.listen}: {why}") from None

    async def close(self) -> None:
        if self.dns is not None:
            await self.dns.close()
        if self.service is not None:
            await self.service.close()
            await self.service.tenancy.close()

    def health(self) -> Mapping[str, Any]:
        out: dict[str, Any] = {"master": self.master, "apps": len(self.current().apps())}
        if self.dns is not None:
            out["dns"] = self.dns.address
            out["dns_domain"] = self.dns.origin.to_text(omit_final_dot=True)
        return out

    def describe(self) -> str:
        n = len(self.current().runners)
        return f"master {self.master}, {n} app{'s' if n != 1 else ''} taken back"


def options(
    state_dir: Path, listen: str, ready_file: Path | None = None, leading: Leading = ALONE
) -> process.Options:
    return process.Options(
        NAME,
        state_dir,
        listen,
        ready_file=ready_file,
        require_role=CLIENT_ROLE,
        migrate=migrate_tables,
        leading=leading,
    )


def hosting(
    master: str, failover_timeout: float, dns: DnsOptions | None = None
) -> process.MakeHosted:
    def make(tls: sdk_tls.Credentials) -> Hosted:
        return Hosted(master, failover_timeout, dns, tls)

    return make


async def serve(
    state_dir: Path,
    master: str,
    listen: str = DEFAULT_LISTEN,
    *,
    failover_timeout: float,
    standby: bool = False,
    ready_file: Path | None = None,
    zk: str | None = None,
    stop: asyncio.Event | None = None,
) -> int:
    """Run until ``stop`` is set (process.serve)."""
    opts = options(state_dir, listen, ready_file, Leading(standby=standby, zk=zk))
    return await process.serve(opts, hosting(master, failover_timeout), stop)


async def main(
    state_dir: Path,
    master: str,
    listen: str,
    failover_timeout: float,
    ready_file: Path | None,
    leading: Leading = ALONE,
    dns: DnsOptions | None = None,
) -> int:
    opts = options(state_dir, listen, ready_file, leading)
    return await process.main(opts, hosting(master, failover_timeout, dns))
