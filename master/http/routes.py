"""The master's HTTP port (aiohttp): health, state as JSON, explanations, Prometheus metrics,
roles' weights and quotas, priority classes, and the web UI (master/ui).

Bad input to a PUT (a body that is not JSON, is nested past
``corral.json_input.MAX_JSON_DEPTH`` or larger than its ``MAX_JSON_BYTES`` (413),
a wrong type, NaN, a negative or unknown resource, a limit below the guarantee, a role name
``corral.roles`` refuses) is answered 400 with ``{"error": reason}``; nothing changes.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from corral import events as cluster_events
from corral.json_input import BadJson, read_json_body
from corral.limits import echo
from corral.master import explanation, paging, views, what_if
from corral.master.core import events as ev
from corral.master.core.commands import ClusterEvent
from corral.master.core.master import MasterCore
from corral.master.core.refusals import CallRejected
from corral.master.http import json_stream, state_pages
from corral.master.http.actions import HTTP_STATUS, add_routes
from corral.master.runtime import MasterRuntime
from corral.master.security.http_auth import principal_of_http
from corral.master.service_status import StatusRefused
from corral.master.ui import params as ui_params
from corral.master.ui.routes import add_ui_routes
from corral.master.wire.convert import WireError
from corral.priority import PriorityClassError, class_from_json
from corral.roles import RoleError, quota_from_json

# Seconds a client has to send a whole request head once it connected (or once the previous
# response on the connection was written), and to send a body the master does not read. Past
# that the connection is closed: half-sent requests must not hold sockets open (issue 17).
HTTP_READ_TIMEOUT = 10.0


STATE_FILTERS = ("framework_id", "completed")


def state_filters(pairs: Iterable[tuple[str, str]]) -> tuple[str | None, bool]:
    """``/api/v1/state``'s query (its name/value pairs, repeats included): ``framework_id=ID``
    (that framework only) and ``completed=true|false`` (ended tasks and removed frameworks;
    true by default). Anything else is a ValueError naming it, for a 400: a misspelt filter
    must not quietly return everything."""
    given: dict[str, str] = {}
    for name, value in pairs:
        if name not in STATE_FILTERS:
            raise ValueError(
                f"unknown query parameter {echo(name)}; the filters are " + ", ".join(STATE_FILTERS)
            )
        if name in given:
            raise ValueError(f"{name} is given twice")
        given[name] = value
    framework_id = given.get("framework_id")
    if framework_id is not None and not framework_id:
        raise ValueError("framework_id is empty")
    completed_text = given.get("completed", "true").lower()
    if completed_text not in ("true", "false"):
        raise ValueError(f"completed must be true or false, got {echo(completed_text)}")
    return framework_id, completed_text == "true"


EVENTS_FILTERS = ("reason", "subject")


def events_filter(pairs: Iterable[tuple[str, str]]) -> tuple[str, str]:
    """``/api/v1/events``' query: ``reason=R`` (one of corral/events.py's REASONS) and
    ``subject=ID`` (events about that object), each optional. Anything else is a ValueError
    naming it, for a 400."""
    given: dict[str, str] = {}
    for name, value in pairs:
        if name not in EVENTS_FILTERS:
            raise ValueError(
                f"unknown query parameter {echo(name)}; the filters are "
                + ", ".join(EVENTS_FILTERS)
            )
        if name in given:
            raise ValueError(f"{name} is given twice")
        given[name] = value
    reason = given.get("reason", "")
    if "reason" in given:
        cluster_events.check_reason(reason)
    return reason, given.get("subject", "")


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def event_json(e: ClusterEvent) -> dict[str, Any]:
    return cluster_events.record(e)


@web.middleware
async def _bad_json(request: web.Request, handler: Handler) -> web.StreamResponse:
    """A body json_input refused, whichever endpoint read it: its status and reason."""
    try:
        return await handler(request)
    except BadJson as exc:
        return web.json_response({"error": str(exc)}, status=exc.status)


def build_app(runtime: MasterRuntime) -> web.Application:
    app = web.Application(middlewares=[_bad_json])

    async def health(_request: web.Request) -> web.Response:
        return web.json_response({"status": "ok", "master_id": runtime.master_id})

    async def state(request: web.Request) -> web.StreamResponse:
        try:
            framework_id, completed = state_filters(request.query.items())
        except ValueError as exc:
            return refused(str(exc))

        def run(core: MasterCore) -> dict[str, Any] | None:
            if framework_id is not None and framework_id not in core.frameworks:
                return None
            return views.state_json(core, framework_id, completed)

        answer = await runtime.query(run)
        if answer is None:
            return refused(
                f"unknown framework {echo(framework_id or '')} (removed frameworks are kept "
                "only up to --max-completed-frameworks)",
                404,
            )
        # Tens of MB at 50,000 agents: written a piece at a time, the loop let go between.
        return await json_stream.write_json(request, answer)

    def state_page(listing: str) -> Handler:
        async def handler(request: web.Request) -> web.Response:
            try:
                build = state_pages.page_builder(listing, request.query.items())
                return web.json_response(await runtime.query(build))
            except paging.BadPage as exc:
                return refused(str(exc))

        return handler

    async def explain(request: web.Request) -> web.Response:
        framework_id = request.match_info["framework_id"]
        caller = principal_of_http(runtime, request)
        try:
            return web.json_response(await explanation.for_caller(runtime, caller, framework_id))
        except CallRejected as exc:
            return web.json_response({"error": exc.message}, status=HTTP_STATUS[exc.code])

    def refused(reason: str, status: int = 400) -> web.Response:
        return web.json_response({"error": reason}, status=status)

    async def body_of(request: web.Request) -> Any:
        """The request's JSON body (an empty one: None, which each caller refuses as the wrong
        shape); BadJson, answered by ``_bad_json``, as json_input reads it."""
        return await read_json_body(request)

    async def apply(event: ev.Event) -> web.Response | None:
        """Run an operator's event through the core: None, or the refusal as a response."""
        try:
            await runtime.call(event)
        except CallRejected as exc:
            return refused(exc.message, HTTP_STATUS[exc.code])
        return None

    async def roles(_request: web.Request) -> web.Response:
        return web.json_response(await runtime.query(views.roles_json))

    async def set_weight(request: web.Request) -> web.Response:
        role = request.match_info["role"]
        try:
            body = await body_of(request)
            if not isinstance(body, dict) or set(body) != {"weight"}:
                raise RoleError('the body must be {"weight": NUMBER}')
            weight = body["weight"]
            if isinstance(weight, bool) or not isinstance(weight, int | float):
                raise RoleError(f"weight must be a number, got {json.dumps(weight)}")
        except RoleError as exc:
            return refused(str(exc))
        event = ev.SetWeight(
            stimulus_id=runtime.stimulus("set-weight"),
            now=runtime.clock(),
            role=role,
            weight=float(weight),
        )
        return await apply(event) or web.json_response({"role": role, "weight": event.weight})

    async def set_quota(request: web.Request) -> web.Response:
        role = request.match_info["role"]
        try:
            body = {} if request.method == "DELETE" else await body_of(request)
            quota = quota_from_json(role, body)
        except RoleError as exc:
            return refused(str(exc))
        event = ev.SetQuota(
            stimulus_id=runtime.stimulus("set-quota"),
            now=runtime.clock(),
            role=role,
            guarantee=quota.guarantee,
            limit=quota.limit,
        )
        return await apply(event) or web.json_response({"role": role, "quota": quota.to_json()})

    async def priority_classes(_request: web.Request) -> web.Response:
        return web.json_response(await runtime.query(views.priority_classes_json))

    async def set_priority_class(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        try:
            body = await body_of(request)
            if isinstance(body, dict) and "name" not in body:
                body = {**body, "name": name}
            c = class_from_json(body)
            if c.name != name:
                raise PriorityClassError(
                    f"the body names priority class {c.name!r}, the path {name!r}"
                )
        except (RoleError, PriorityClassError) as exc:
            return refused(str(exc))
        event = ev.SetPriorityClass(
            stimulus_id=runtime.stimulus("set-priority-class"),
            now=runtime.clock(),
            priority_class=c,
        )
        return await apply(event) or web.json_response(c.to_json())

    async def delete_priority_class(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        event = ev.DeletePriorityClass(
            stimulus_id=runtime.stimulus("delete-priority-class"),
            now=runtime.clock(),
            name=name,
        )
        return await apply(event) or web.json_response({"deleted": name})

    async def events(request: web.Request) -> web.Response:
        try:
            reason, subject = events_filter(request.query.items())
        except ValueError as exc:
            return refused(str(exc))
        return web.json_response(
            [
                event_json(e)
                for e in runtime.recent_events.select(reason)
                if not subject or e.subject == subject
            ]
        )

    async def metrics(_request: web.Request) -> web.Response:
        await runtime.query(lambda _core: runtime.refresh_gauges())
        body = generate_latest(runtime.metrics.registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def plain(_request: web.Request) -> web.Response:
        data = await runtime.query(lambda core: views.state_json(core, tasks=False))
        return web.Response(text=views.index_html(data), content_type="text/html")

    async def simulate(request: web.Request) -> web.Response:
        try:
            asked = what_if.request_from_json(await body_of(request))
        except WireError as exc:
            return refused(str(exc))
        return web.json_response(await what_if.answer(runtime, asked))

    async def service_statuses(request: web.Request) -> web.Response:
        try:
            query = ui_params.query_of(request.query.items(), ("kind",))
            kept = runtime.service_status.listing(query.get("kind", ""))
        except (ValueError, StatusRefused) as exc:
            return refused(str(exc))
        now = runtime.clock()
        return web.json_response({"statuses": [s.to_json(now) for s in kept]})

    async def publish_status(request: web.Request) -> web.Response:
        body = await body_of(request)
        fields = {"document", "ttl_seconds"}
        if not isinstance(body, dict) or "document" not in body or not set(body) <= fields:
            return refused('the body must be {"document": {...}} with "ttl_seconds" optional')
        ttl = body.get("ttl_seconds", 0)
        if isinstance(ttl, bool) or not isinstance(ttl, int | float):
            return refused("ttl_seconds must be a number")
        try:
            runtime.service_status.publish(
                request.match_info["service"],
                request.match_info["kind"],
                principal_of_http(runtime, request).name,
                json.dumps(body["document"]),
                float(ttl),
                runtime.clock(),
            )
        except StatusRefused as exc:
            return refused(exc.message, 403 if exc.denied else 400)
        return web.json_response({})

    # The web UI at / (docs/ui.md); the plain page, which needs no JavaScript, at /plain.
    add_ui_routes(app, runtime)
    app.router.add_get("/plain", plain)
    app.router.add_get("/health", health)
    app.router.add_get("/api/v1/state", state)
    for listing in state_pages.PARAMS:  # GetState's lists a page at a time (state_pages.py)
        app.router.add_get(f"/api/v1/state/{listing}", state_page(listing))
    app.router.add_get("/api/v1/events", events)
    app.router.add_get("/api/v1/frameworks/{framework_id}/explain", explain)
    app.router.add_get("/api/v1/roles", roles)
    app.router.add_put("/api/v1/roles/{role}/weight", set_weight)
    app.router.add_put("/api/v1/roles/{role}/quota", set_quota)
    app.router.add_delete("/api/v1/roles/{role}/quota", set_quota)
    app.router.add_get("/api/v1/priorityclasses", priority_classes)
    app.router.add_put("/api/v1/priorityclasses/{name}", set_priority_class)
    app.router.add_delete("/api/v1/priorityclasses/{name}", delete_priority_class)
    app.router.add_get("/metrics", metrics)
    app.router.add_post("/api/v1/simulate", simulate)
    app.router.add_get("/api/v1/services/status", service_statuses)
    app.router.add_put("/api/v1/services/{service}/status/{kind}", publish_status)
    add_routes(app, runtime)  # operators' actions and tasks' files (http_actions.py)
    return app
