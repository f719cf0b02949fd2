"""The serving service's HTTP API (docs/frameworks.md, "The serving service"), on the services
scaffold (``corral.frameworks.service.http_api``: JSON, errors, health, metrics, TLS).

Every answer is JSON; an error is ``{"error": "..."}`` with 400 (bad input, naming the field:
nothing changed), 403 (the caller may not act on the app, or the master refuses what the app
asks for to its owner: tenancy.py), 404 (no such app), 409 (the app changed while the master
was asked: try again), 503 (the master could not be asked) or 500 (a bug; logged, the service
goes on). Each handler asks the tenancy rules first, then changes the service. The endpoints'
watch form streams one JSON object per line (``application/x-ndjson``): the current endpoints
at once, then the whole list again after every change, and an empty line every
``WATCH_KEEPALIVE`` seconds so a client (and we) notice a dead connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
from collections.abc import Callable

from aiohttp import web

from corral.frameworks.service.http_api import (
    STOPPING,
    ApiError,
    BadRequest,
    caller,
    json_object,
    json_response,
    known_fields,
    read_json,
)
from corral.frameworks.service.tenancy import NOBODY, Owner
from corral.frameworks.serving.app import AppSpec
from corral.frameworks.serving.service import Service, UnknownApp, endpoint_json

WATCH_KEEPALIVE = 15.0
# The service, as the scaffold holds it: made once this process leads.
SERVICE: web.AppKey[Callable[[], Service]] = web.AppKey("service")


def add_routes(app: web.Application, service: Callable[[], Service]) -> None:
    app[SERVICE] = service
    app.router.add_get("/v1/apps", list_apps)
    app.router.add_get("/v1/apps/{id}", get_app)
    app.router.add_put("/v1/apps/{id}", put_app)
    app.router.add_delete("/v1/apps/{id}", delete_app)
    app.router.add_put("/v1/apps/{id}/scale", scale_app)
    app.router.add_post("/v1/apps/{id}/restart", restart_app)
    app.router.add_post("/v1/apps/{id}/rollback", rollback_app)
    app.router.add_get("/v1/apps/{id}/versions", versions)
    app.router.add_get("/v1/apps/{id}/status", status)
    app.router.add_get("/v1/apps/{id}/endpoints", endpoints)


def _service(request: web.Request) -> Service:
    return request.app[SERVICE]()


async def _may(request: web.Request, what: str) -> tuple[Service, str, Owner]:
    """The app of the path, its owner, once the caller may act on it (tenancy rule 2): 404
    for no such app, 403 for one the caller may not touch."""
    service, app_id = _service(request), request.match_info["id"]
    owner = service.owner(app_id)
    if owner is None:
        raise UnknownApp(app_id)
    await service.tenancy.may_act_for(caller(request), owner, f"{what} app {app_id}")
    return service, app_id, owner


async def _may_run(service: Service, app_id: str, owner: Owner, spec: AppSpec, what: str) -> None:
    """Tenancy rule 3: the master reviews what ``spec`` asks for, for ``owner``."""
    await service.tenancy.may_ask(
        owner,
        spec.framework_info(),
        [spec.demand(spec.instances)],
        service.framework_id(app_id),
        f"{what} of app {app_id}",
    )


def _unchanged(service: Service, app_id: str, owner: Owner | None) -> None:
    """The app still belongs to whom it did when the master was asked."""
    if service.owner(app_id) != owner:
        raise ApiError(f"app {app_id} changed while the master was asked; try again", 409)


async def list_apps(request: web.Request) -> web.Response:
    service = _service(request)
    apps = service.apps()
    owners = {service.owner(a["id"]) or NOBODY for a in apps}
    visible = await service.tenancy.visible(caller(request), owners)
    return json_response({"apps": [a for a in apps if a["owner"] in visible]})


async def get_app(request: web.Request) -> web.Response:
    service, app_id, _ = await _may(request, "read")
    return json_response(service.get(app_id))


async def put_app(request: web.Request) -> web.Response:
    service, app_id = _service(request), request.match_info["id"]
    body = await read_json(request)
    spec = service.parse(app_id, body)  # 400 before anything is asked
    who = caller(request)
    existing = service.owner(app_id)
    if existing is not None:
        await service.tenancy.may_act_for(who, existing, f"change app {app_id}")
    owner = existing if existing is not None else service.tenancy.owner_of(who)
    await _may_run(service, app_id, owner, spec, "the app" if existing is None else "the change")
    _unchanged(service, app_id, existing)
    created, answer = service.put(app_id, body, owner)
    return json_response(answer, 201 if created else 200)


async def delete_app(request: web.Request) -> web.Response:
    service, app_id, _ = await _may(request, "delete")
    if await service.delete(app_id):
        return json_response({"deleted": app_id})
    return json_response(
        {
            "deleting": app_id,
            "reason": "the master has not answered yet; the app's instances are killed and "
            "the app forgotten once it does",
        },
        202,
    )


async def scale_app(request: web.Request) -> web.Response:
    body = json_object(await read_json(request))
    known_fields(body, {"instances"})
    if "instances" not in body:
        raise BadRequest("instances: required")
    service, app_id, owner = await _may(request, "scale")
    instances = body["instances"]
    if isinstance(instances, int) and not isinstance(instances, bool) and instances >= 0:
        spec = dataclasses.replace(service.spec(app_id), instances=instances)
        await _may_run(service, app_id, owner, spec, f"the scale to {instances}")
        _unchanged(service, app_id, owner)
    return json_response(service.scale(app_id, instances))  # a bad count: 400 from here


async def restart_app(request: web.Request) -> web.Response:
    service, app_id, owner = await _may(request, "restart")
    await _may_run(service, app_id, owner, service.spec(app_id), "the restart")
    _unchanged(service, app_id, owner)
    return json_response(service.restart(app_id))


async def rollback_app(request: web.Request) -> web.Response:
    body = json_object(await read_json(request, required=False))
    known_fields(body, {"revision"})
    service, app_id, owner = await _may(request, "roll back")
    to = body.get("revision")
    await _may_run(service, app_id, owner, service.rollback_spec(app_id, to), "the rollback")
    _unchanged(service, app_id, owner)
    return json_response(service.rollback(app_id, to))


async def versions(request: web.Request) -> web.Response:
    service, app_id, _ = await _may(request, "read")
    return json_response({"app": app_id, "revisions": service.history(app_id)})


async def status(request: web.Request) -> web.Response:
    service, app_id, _ = await _may(request, "read")
    return json_response(await service.status(app_id))


async def endpoints(request: web.Request) -> web.StreamResponse:
    service, app_id, _ = await _may(request, "read")
    found, changed = service.endpoints(app_id)
    watch = request.query.get("watch", "").lower()
    if watch not in ("", "0", "false", "1", "true"):
        raise BadRequest(f"watch: must be true or false, got {watch!r}")
    if watch not in ("1", "true"):
        return json_response({"app": app_id, "endpoints": [endpoint_json(e) for e in found]})
    response = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
    await response.prepare(request)
    stopping = request.app[STOPPING]
    line = {"app": app_id, "endpoints": [endpoint_json(e) for e in found]}
    with contextlib.suppress(ConnectionError):  # the client went away
        await response.write(json.dumps(line).encode() + b"\n")
        await _follow(response, service, app_id, changed, stopping)
        await response.write_eof()
    return response


async def _follow(
    response: web.StreamResponse,
    service: Service,
    app_id: str,
    changed: asyncio.Event,
    stopping: asyncio.Event,
) -> None:
    while not stopping.is_set():
        waits = {asyncio.ensure_future(changed.wait()), asyncio.ensure_future(stopping.wait())}
        try:
            await asyncio.wait(waits, timeout=WATCH_KEEPALIVE, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()
        if stopping.is_set():
            break
        if service.is_deleted(app_id):
            await response.write(json.dumps({"app": app_id, "deleted": True}).encode() + b"\n")
            break
        if not changed.is_set():
            await response.write(b"\n")  # keepalive
            continue
        found, changed = service.endpoints(app_id)
        line = {"app": app_id, "endpoints": [endpoint_json(e) for e in found]}
        await response.write(json.dumps(line).encode() + b"\n")
