"""The UI's routes on the master's HTTP app: the page, its static files, its JSON endpoints
and its live stream (docs/ui.md lists them with their parameters).

Every endpoint checks its query (an unknown or repeated parameter, a bad number or value is a
400 naming it) and answers a missing object with 404; the data is read on the core's task
between two events, as every other view is.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from aiohttp import web

from corral.master.core.master import MasterCore
from corral.master.runtime import MasterRuntime
from corral.master.ui import cluster, frameworks, live, params, tasks

STATIC = Path(__file__).parent / "static"
NO_CACHE = {"Cache-Control": "no-cache"}  # revalidated (ETag) so an upgrade shows at once
COST_HEADER = "X-Corral-Cost"

Builder = Callable[[MasterCore, Mapping[str, str]], Any]


def _refused(reason: str, status: int = 400) -> web.Response:
    return web.json_response({"error": reason}, status=status)


def add_ui_routes(app: web.Application, runtime: MasterRuntime) -> None:
    samples = live.Samples(runtime)
    closing = asyncio.Event()  # set when the app shuts down: open streams end

    async def on_startup(_app: web.Application) -> None:
        samples.start()

    async def on_shutdown(_app: web.Application) -> None:
        closing.set()

    async def on_cleanup(_app: web.Application) -> None:
        await samples.stop()

    async def no_cache(request: web.Request, response: web.StreamResponse) -> None:
        if request.path.startswith("/ui/static/"):
            response.headers["Cache-Control"] = "no-cache"

    app.on_response_prepare.append(no_cache)
    app.on_startup.append(on_startup)
    app.on_shutdown.append(on_shutdown)
    app.on_cleanup.append(on_cleanup)

    def _answer(data: Any, core_seconds: float) -> web.Response:
        """``data`` as JSON, with what it cost the master (its core's task and the encoding)
        in ``X-Corral-Cost``, seconds: the page spaces its refreshes by it (docs/ui.md,
        "Cost"); counted in ``samples.served``."""
        started = time.perf_counter()
        body = json.dumps(data)
        cost = core_seconds + time.perf_counter() - started
        samples.served += cost
        return web.Response(
            text=body, content_type="application/json", headers={COST_HEADER: f"{cost:.6f}"}
        )

    async def timed(fn: Callable[[MasterCore], Any]) -> tuple[Any, float]:
        """``fn``'s answer on the core's task, and the seconds it held the task."""

        def run(core: MasterCore) -> tuple[Any, float]:
            started = time.perf_counter()
            return fn(core), time.perf_counter() - started

        result: tuple[Any, float] = await runtime.query(run)
        return result

    def listing(build: Builder, allowed: tuple[str, ...]) -> Any:
        async def handler(request: web.Request) -> web.Response:
            try:
                query = params.query_of(request.query.items(), allowed)
                data, cost = await timed(lambda core: build(core, query))
            except ValueError as exc:
                return _refused(str(exc))
            return _answer(data, cost)

        return handler

    async def page(_request: web.Request) -> web.FileResponse:
        return web.FileResponse(STATIC / "index.html", headers=NO_CACHE)

    async def agent(request: web.Request) -> web.Response:
        agent_id = request.match_info["agent_id"]
        try:
            params.query_of(request.query.items(), ())
        except ValueError as exc:
            return _refused(str(exc))
        data, cost = await timed(
            lambda core: cluster.agent_detail(core, agent_id, runtime.recent_events)
        )
        if data is None:
            return _refused(f"unknown agent {agent_id!r}", 404)
        return _answer(data, cost)

    async def task(request: web.Request) -> web.Response:
        task_id = request.match_info["task_id"]
        try:
            query = params.query_of(request.query.items(), tasks.DETAIL_PARAMS)
        except ValueError as exc:
            return _refused(str(exc))
        framework_id = query.get("framework_id", "")
        data, cost = await timed(
            lambda core: tasks.task_detail(core, task_id, framework_id, runtime.recent_events)
        )
        if data is None:
            of = f" of framework {framework_id!r}" if framework_id else ""
            return _refused(
                f"unknown task {task_id!r}{of} (ended tasks are kept only up to "
                "--max-completed-tasks per framework)",
                404,
            )
        return _answer(data, cost)

    async def framework(request: web.Request) -> web.Response:
        framework_id = request.match_info["framework_id"]
        try:
            params.query_of(request.query.items(), ())
        except ValueError as exc:
            return _refused(str(exc))
        now = runtime.clock()
        data, cost = await timed(
            lambda core: frameworks.framework_detail(core, framework_id, now, runtime.recent_events)
        )
        if data is None:
            return _refused(f"unknown framework {framework_id!r}", 404)
        return _answer(data, cost)

    async def pending(request: web.Request) -> web.Response:
        try:
            query = params.query_of(request.query.items(), frameworks.PENDING_PARAMS)
            now = runtime.clock()
            data, cost = await timed(lambda core: frameworks.pending(core, query, now))
        except ValueError as exc:
            return _refused(str(exc))
        except KeyError as exc:
            return _refused(f"unknown framework {exc.args[0]!r}", 404)
        return _answer(data, cost)

    async def samples_json(request: web.Request) -> web.Response:
        try:
            params.query_of(request.query.items(), ())
        except ValueError as exc:
            return _refused(str(exc))
        return _answer(samples.json(), 0.0)

    async def stream(request: web.Request) -> web.StreamResponse:
        return await live.stream(request, runtime, samples, closing)

    router = app.router
    router.add_get("/", page)
    router.add_static("/ui/static/", STATIC, append_version=False)
    router.add_get("/api/v1/cluster", listing(cluster.overview, cluster.OVERVIEW_PARAMS))
    router.add_get("/api/v1/cluster/samples", samples_json)
    router.add_get("/api/v1/agents", listing(cluster.agents_page, cluster.AGENT_PARAMS))
    router.add_get("/api/v1/agents/{agent_id}", agent)
    router.add_get("/api/v1/tasks", listing(tasks.tasks_page, tasks.TASK_PARAMS))
    router.add_get("/api/v1/tasks/{task_id}", task)
    router.add_get(
        "/api/v1/frameworks", listing(frameworks.frameworks_page, frameworks.FRAMEWORK_PARAMS)
    )
    router.add_get("/api/v1/frameworks/{framework_id}", framework)
    router.add_get("/api/v1/pending", pending)
    router.add_get("/api/v1/stream", stream)
