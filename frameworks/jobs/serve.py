"""``corral jobs serve``: the job service as a process, on the services scaffold
(``corral.frameworks.service.process``): it leads (or waits as a standby), takes back every job
of its records (``jobs.db`` in ``--state``), serves the HTTP API (api.py), and on SIGINT or
SIGTERM stops acting and leaves every job's tasks running for the next process."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

from corral.frameworks import sdk
from corral.frameworks.jobs import api
from corral.frameworks.jobs.queues import QueueConfig
from corral.frameworks.jobs.service import (
    JobError,
    JobExists,
    JobService,
    UnknownJob,
)
from corral.frameworks.jobs.store import JobStore
from corral.frameworks.sdk import tls as sdk_tls
from corral.frameworks.service import process
from corral.frameworks.service.process import ALONE, Leading
from corral.frameworks.service.records import Records
from corral.frameworks.service.status_loop import StatusLoop
from corral.frameworks.service.tenancy import Tenancy

NAME = "jobs"
DEFAULT_LISTEN = "127.0.0.1:5091"
STATUS_INTERVAL = 5.0  # seconds between two statuses published for the master's web UI


class Hosted:
    """The job service as the scaffold hosts it: a ``JobService`` over the records, made when
    this process comes to lead."""

    errors: Mapping[type[Exception], int] = {JobError: 400, UnknownJob: 404, JobExists: 409}

    def __init__(self, settings: Settings, tls: sdk_tls.Credentials) -> None:
        self.settings = settings
        self.tls = tls
        self.service: JobService | None = None
        self.status: StatusLoop | None = None  # its queues, for the master's web UI

    def current(self) -> JobService:
        assert self.service is not None, "the scaffold routes requests only once started"
        return self.service

    def add_routes(self, app: web.Application) -> None:
        api.add_routes(app, self.current)

    async def start(self, records: Records) -> None:
        s = self.settings
        # Over TLS the master decides for the jobs' owners and callers (tenancy.py), queues
        # included; in plain text nobody can be told apart.
        secure = isinstance(self.tls, sdk_tls.TLS)
        tenancy = Tenancy(sdk.Reviewer(s.master, self.tls) if secure else None)
        self.service = JobService(
            JobStore(records),
            s.config,
            s.master,
            state_dir=s.state_dir,
            role=s.role,
            failover_timeout=s.failover_timeout,
            tenancy=tenancy,
            tls=self.tls,
        )
        await self.service.start()
        self.status = StatusLoop.publishing(
            s.master, self.tls, NAME, "queues", self.service.status_document, STATUS_INTERVAL
        )

    async def close(self) -> None:
        if self.status is not None:
            await self.status.close()
        if self.service is not None:
            await self.service.close()
            await self.service.tenancy.close()

    def health(self) -> Mapping[str, Any]:
        s = self.current()
        return {
            "master": s.master,
            "jobs": len(s.store.jobs()),
            "running": len(s.runners),
            "last_cycle_ms": round(s.last_cycle_ms, 3),
            **(self.status.health() if self.status else {}),
        }

    def describe(self) -> str:
        n = len(self.current().runners)
        return f"master {self.settings.master}, {n} running job{'s' if n != 1 else ''} taken back"


@dataclass(frozen=True)
class Settings:
    master: str
    config: QueueConfig
    state_dir: Path
    role: str = "*"
    failover_timeout: float = 7 * 24 * 3600.0


def options(
    state_dir: Path, listen: str, ready_file: Path | None = None, leading: Leading = ALONE
) -> process.Options:
    # Any certificate of the cluster's CA may call; what it may do is the master's to say
    # (tenancy, and the queues each principal may submit to).
    return process.Options(
        NAME, state_dir, listen, ready_file=ready_file, require_role=None, leading=leading
    )


def hosting(settings: Settings) -> process.MakeHosted:
    def make(tls: sdk_tls.Credentials) -> Hosted:
        return Hosted(settings, tls)

    return make
