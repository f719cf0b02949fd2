"""The master's HTTP port (aiohttp): health, state as JSON, explanations, Prometheus metrics."""

from __future__ import annotations

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from corral.master import views
from corral.master.core.master import CallRejected, MasterCore
from corral.master.runtime import MasterRuntime

# Seconds a client has to send a whole request head once it connected (or once the previous
# response on the connection was written), and to send a body the master does not read. Past
# that the connection is closed: half-sent requests must not hold sockets open (issue 17).
HTTP_READ_TIMEOUT = 10.0


def build_app(runtime: MasterRuntime) -> web.Application:
    app = web.Application()

    async def health(_request: web.Request) -> web.Response:
        return web.json_response({"status": "ok", "master_id": runtime.master_id})

    async def state(_request: web.Request) -> web.Response:
        return web.json_response(await runtime.query(views.state_json))

    async def explain(request: web.Request) -> web.Response:
        framework_id = request.match_info["framework_id"]
        now = runtime.clock()

        def run(core: MasterCore) -> dict[str, object]:
            return core.explain(framework_id, now)

        try:
            return web.json_response(await runtime.query(run))
        except CallRejected as exc:
            return web.json_response({"error": exc.message}, status=404)

    async def events(_request: web.Request) -> web.Response:
        return web.json_response(
            [
                {
                    "timestamp": e.timestamp,
                    "kind": e.kind,
                    "subject": e.subject,
                    "message": e.message,
                    "stimulus_id": e.stimulus_id,
                }
                for e in runtime.recent_events
            ]
        )

    async def metrics(_request: web.Request) -> web.Response:
        await runtime.query(lambda _core: runtime.refresh_gauges())
        body = generate_latest(runtime.metrics.registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def index(_request: web.Request) -> web.Response:
        data = await runtime.query(views.state_json)
        return web.Response(text=views.index_html(data), content_type="text/html")

    app.router.add_get("/", index)
    app.router.add_get("/health", health)
    app.router.add_get("/api/v1/state", state)
    app.router.add_get("/api/v1/events", events)
    app.router.add_get("/api/v1/frameworks/{framework_id}/explain", explain)
    app.router.add_get("/metrics", metrics)
    return app
