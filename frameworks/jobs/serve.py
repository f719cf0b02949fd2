"""``corral jobs serve``: the job service as a process, on the services scaffold
(``corral.frameworks.service.process``): it leads (or waits as a standby), takes back every job
of its records (``jobs.db`` in ``--state``), serves the HTTP API (api.py), and on SIGINT or
SIGTERM stops acting and leaves every job's tasks running for the next process."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aiohttp import web

from corral.frameworks.jobs import api
from corral.frameworks.jobs.queues import QueueConfig
from corral.frameworks.jobs.service import (
    Authorizer,
    JobError,
    JobExists,
    JobService,
    UnknownJob,
)
from corral.frameworks.jobs.store import JobStore
from corral.frameworks.sdk import tls as sdk_tls
from corral.frameworks.service import process
from corral.frameworks.service.records import Records

NAME = "jobs"
DEFAULT_LISTEN = "127.0.0.1:5091"


class Hosted:
    errors: Mapping[type[Exception], int] = {JobError: 400, UnknownJob: 404, JobExists: 409}

    def __init__(self, service: JobService) -> None:
        self.service = service

    async def start(self) -> None:
        await self.service.start()

    async def close(self) -> None:
        await self.service.close()

    def add_routes(self, app: web.Application) -> None:
        api.add_routes(app, self.service)

    def health(self) -> Mapping[str, Any]:
        s = self.service
        return {
            "master": s.master,
            "jobs": len(s.store.jobs()),
            "running": len(s.runners),
            "last_cycle_ms": round(s.last_cycle_ms, 3),
        }

    def describe(self) -> str:
        n = len(self.service.runners)
        return f"master {self.service.master}, {n} running job{'s' if n != 1 else ''} taken back"


def options(
    state_dir: Path, listen: str, standby: bool = False, ready_file: Path | None = None
) -> process.Options:
    # Any certificate of the cluster's CA may call; what it may do is the ACL's (authorizer).
    return process.Options(
        NAME, state_dir, listen, standby=standby, ready_file=ready_file, require_role=None
    )


def hosting(
    master: str,
    config: QueueConfig,
    state_dir: Path,
    *,
    role: str,
    failover_timeout: float,
    authorizer: Authorizer | None,
) -> process.MakeHosted:
    def make(records: Records, tls: sdk_tls.Credentials) -> Hosted:
        service = JobService(
            JobStore(records),
            config,
            master,
            state_dir=state_dir,
            role=role,
            failover_timeout=failover_timeout,
            authorizer=authorizer,
            tls=tls,
        )
        return Hosted(service)

    return make
