"""The serving service's HTTP API (docs/frameworks.md, "The serving service"), on the services
scaffold (``corral.frameworks.service.http_api``: JSON, errors, health, metrics, TLS).

Every answer is JSON; an error is ``{"error": "..."}`` with 400 (bad input, naming the field:
nothing changed), 404 (no such app) or 500 (a bug; logged, the service goes on). The endpoints'
watch form streams one JSON object per line (``application/x-ndjson``): the current endpoints
at once, then the whole list again after every change, and an empty line every
``WATCH_KEEPALIVE`` seconds so a client (and we) notice a dead connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import json

from aiohttp import web

from corral.frameworks.service.http_api import (
    STOPPING,
    BadRequest,
    json_object,
    json_response,
    known_fields,
    read_json,
)
from corral.frameworks.serving.service import Service, endpoint_json

WATCH_KEEPALIVE = 15.0
SERVICE: web.AppKey[Service] = web.AppKey("service", Service)


def add_routes(app: web.Application, service: Service) -> None:
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
    return request.app[SERVICE]


async def list_apps(request: web.Request) -> web.Response:
    return json_response({"apps": _service(request).apps()})


async def get_app(request: web.Request) -> web.Response:
    return json_response(_service(request).get(request.match_info["id"]))


async def put_app(request: web.Request) -> web.Response:
    created, answer = _service(request).put(request.match_info["id"], await read_json(request))
    return json_response(answer, 201 if created else 200)


async def delete_app(request: web.Request) -> web.Response:
    app_id = request.match_info["id"]
    if await _service(request).delete(app_id):
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
    return json_response(_service(request).scale(request.match_info["id"], body["instances"]))


async def restart_app(request: web.Request) -> web.Response:
    return json_response(_service(request).restart(request.match_info["id"]))


async def rollback_app(request: web.Request) -> web.Response:
    body = json_object(await read_json(request, required=False))
    known_fields(body, {"revision"})
    return json_response(_service(request).rollback(request.match_info["id"], body.get("revision")))


async def versions(request: web.Request) -> web.Response:
    app_id = request.match_info["id"]
    return json_response({"app": app_id, "revisions": _service(request).history(app_id)})


async def status(request: web.Request) -> web.Response:
    return json_response(await _service(request).status(request.match_info["id"]))


async def endpoints(request: web.Request) -> web.StreamResponse:
    service, app_id = _service(request), request.match_info["id"]
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
