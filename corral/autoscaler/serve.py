"""``corral autoscaler``: the autoscaler as a process on the services scaffold
(``corral.frameworks.service.process``): one process acts on a state directory at a time (its
lock), its nodes and groups are records (``autoscaler.db``), and its HTTP API shows the node
groups, nodes and events (``corral get nodegroups``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

from corral.autoscaler.config import Config
from corral.autoscaler.metrics import AutoscalerMetrics
from corral.autoscaler.service import AutoscalerService
from corral.frameworks.sdk import tls as sdk_tls
from corral.frameworks.service import http_api, process
from corral.frameworks.service.process import ALONE, Leading
from corral.frameworks.service.records import Records
from corral.frameworks.service.status_loop import StatusLoop

NAME = "autoscaler"
DEFAULT_LISTEN = "127.0.0.1:5092"


class UnknownGroup(Exception):
    pass


@dataclass(frozen=True)
class Settings:
    master: str
    config: Config
    state_dir: Path
    seed: int = 0


class Hosted:
    errors: Mapping[type[Exception], int] = {UnknownGroup: 404}

    def __init__(self, settings: Settings, tls: sdk_tls.Credentials) -> None:
        self.settings = settings
        self.tls = tls
        self.service: AutoscalerService | None = None
        self.status: StatusLoop | None = None  # its node groups, for the master's web UI

    def current(self) -> AutoscalerService:
        assert self.service is not None, "the scaffold routes requests only once started"
        return self.service

    def add_routes(self, app: web.Application) -> None:
        async def groups(_request: web.Request) -> web.Response:
            return http_api.json_response({"node_groups": self.current().nodegroups()})

        async def group(request: web.Request) -> web.Response:
            name = request.match_info["name"]
            s = self.current()
            found = next((g for g in s.nodegroups() if g["name"] == name), None)
            if found is None:
                raise UnknownGroup(f"no node group {name!r}")
            nodes = [n for n in s.nodes() if n["group"] == name]
            # Its own and its nodes' events, and the demands' that name it (why it did or did
            # not grow: "group NAME: +2 nodes", "NAME: group at max").
            events = [
                e
                for e in s.recent_events()
                if e["subject"] == name
                or e["subject"].startswith(f"{name}-")
                or f"group {name}:" in e["message"]
                or e["message"].startswith(f"{name}: ")
                or f"; {name}: " in e["message"]
            ]
            return http_api.json_response({**found, "nodes": nodes, "events": events[-50:]})

        async def nodes(_request: web.Request) -> web.Response:
            return http_api.json_response({"nodes": self.current().nodes()})

        async def events(request: web.Request) -> web.Response:
            subject = request.query.get("subject", "")
            return http_api.json_response({"events": self.current().recent_events(subject)})

        app[http_api.METRICS].register(AutoscalerMetrics(self.current))
        app.router.add_get("/v1/nodegroups", groups)
        app.router.add_get("/v1/nodegroups/{name}", group)
        app.router.add_get("/v1/nodes", nodes)
        app.router.add_get("/v1/events", events)

    async def start(self, records: Records) -> None:
        s = self.settings
        self.service = AutoscalerService(
            s.config, records, s.master, s.state_dir, self.tls, seed=s.seed
        )
        await self.service.start()
        self.status = StatusLoop.publishing(
            s.master,
            self.tls,
            NAME,
            "nodegroups",
            self.service.status_document,
            s.config.options.scan_interval,
        )

    async def close(self) -> None:
        if self.status is not None:
            await self.status.close()
        if self.service is not None:
            await self.service.close()

    def health(self) -> Mapping[str, Any]:
        s = self.current()
        return {
            "master": s.master,
            "evaluations": s.evaluations,
            "last_evaluation_ms": round(s.last_eval_ms, 3),
            "last_error": s.last_error,
            "nodes": len(s.policy.nodes),
            **(self.status.health() if self.status else {}),
        }

    def describe(self) -> str:
        n = len(self.current().policy.nodes)
        return f"master {self.settings.master}, {n} node{'s' if n != 1 else ''} taken back"


def options(
    state_dir: Path, listen: str, ready_file: Path | None = None, leading: Leading = ALONE
) -> process.Options:
    # Over TLS any certificate of the cluster's CA may read the node groups. Leadership is the
    # scaffold's (frameworks/service/leadership.py): one autoscaler acts, standbys wait.
    return process.Options(
        NAME, state_dir, listen, ready_file=ready_file, require_role=None, leading=leading
    )


def hosting(settings: Settings) -> process.MakeHosted:
    def make(tls: sdk_tls.Credentials) -> Hosted:
        return Hosted(settings, tls)

    return make
