"""The serving service's HTTP API (docs/frameworks.md, "The serving service"), on aiohttp.

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
from collections.abc import Awaitable, Callable
from typing import Any

import structlog
from aiohttp import web

from corral.frameworks.sdk.json_input import MAX_JSON_BYTES, BadJson, read_json_body
from corral.frameworks.sdk.tls import peer_roles
from corral.frameworks.serving.app import AppError
from corral.frameworks.serving.service import Service, UnknownApp, endpoint_json

log = structlog.get_logger("corral.serving")

WATCH_KEEPALIVE = 15.0
SERVICE: web.AppKey[Service] = web.AppKey("service", Service)
# Set when the service stops, so watches end instead of holding the shutdown up.
STOPPING: web.AppKey[asyncio.Event] = web.AppKey("stopping", asyncio.Event)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
# Over TLS, who may call the API: a certificate of the cluster's CA with this role (the TLS
# handshake already refused any other CA's, or none).
CLIENT_ROLE = "operator"


def build_app(service: Service, require_role: str | None = None) -> web.Application:
    """The API; with ``require_role``, a caller whose certificate lacks that role gets 403."""
    middlewares = [_errors] if require_role is None else [_errors, _role_check(require_role)]
    app = web.Application(middlewares=middlewares, client_max_size=MAX_JSON_BYTES)
    app[SERVICE] = service
    app[STOPPING] = asyncio.Event()
    app.router.add_get("/v1/health", health)
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
    return app


def _role_check(role: str) -> Any:
    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path != "/v1/health":
            transport = request.transport
            name, roles = peer_roles(transport.get_extra_info("peercert") if transport else None)
            if role not in roles:
                return _error(
                    403,
                    f"principal {name or '(none)'} may not use the serving service: its "
                    f"certificate's roles are {', '.join(sorted(roles)) or 'none'}, not {role}",
                )
        return await handler(request)

    return check


def _json(data: Any, status: int = 200) -> web.Response:
    return web.json_response(data, status=status, dumps=lambda d: json.dumps(d, indent=2))


def _error(status: int, message: str) -> web.Response:
    return _json({"error": message}, status)


@web.middleware
async def _errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except AppError as err:
        return _error(400, str(err))
    except BadJson as err:
        return _error(err.status, str(err))
    except UnknownApp as err:
        return _error(404, str(err))
    except web.HTTPException as err:
        if err.status >= 400:
            return _error(err.status, err.reason)
        raise
    except Exception:
        log.exception("request failed", method=request.method, path=request.path)
        return _error(500, "internal error (see the service's log)")


async def _body(request: web.Request, required: bool = True) -> Any:
    """The JSON body, read with the bounds every Corral HTTP API reads with (json_input: too
    large 413, not JSON or too deep 400, answered by ``_errors``)."""
    body = await read_json_body(request)
    if body is None:
        if required:
            raise AppError("body: a JSON object is required")
        return {}
    return body


def _object(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise AppError(f"body: must be a JSON object, got {type(value).__name__}")
    return value


def _service(request: web.Request) -> Service:
    return request.app[SERVICE]


async def health(request: web.Request) -> web.Response:
    s = _service(request)
    return _json({"ok": True, "master": s.master, "apps": len(s.apps())})


async def list_apps(request: web.Request) -> web.Response:
    return _json({"apps": _service(request).apps()})


async def get_app(request: web.Request) -> web.Response:
    return _json(_service(request).get(request.match_info["id"]))


async def put_app(request: web.Request) -> web.Response:
    created, answer = _service(request).put(request.match_info["id"], await _body(request))
    return _json(answer, 201 if created else 200)


async def delete_app(request: web.Request) -> web.Response:
    app_id = request.match_info["id"]
    if await _service(request).delete(app_id):
        return _json({"deleted": app_id})
    return _json(
        {
            "deleting": app_id,
            "reason": "the master has not answered yet; the app's instances are killed and "
            "the app forgotten once it does",
        },
        202,
    )


async def scale_app(request: web.Request) -> web.Response:
    body = _object(await _body(request))
    unknown = sorted(set(body) - {"instances"})
    if unknown:
        raise AppError(f"body: unknown field {unknown[0]!r} (known: instances)")
    if "instances" not in body:
        raise AppError("instances: required")
    return _json(_service(request).scale(request.match_info["id"], body["instances"]))


async def restart_app(request: web.Request) -> web.Response:
    return _json(_service(request).restart(request.match_info["id"]))


async def rollback_app(request: web.Request) -> web.Response:
    body = _object(await _body(request, required=False))
    unknown = sorted(set(body) - {"revision"})
    if unknown:
        raise AppError(f"body: unknown field {unknown[0]!r} (known: revision)")
    return _json(_service(request).rollback(request.match_info["id"], body.get("revision")))


async def versions(request: web.Request) -> web.Response:
    app_id = request.match_info["id"]
    return _json({"app": app_id, "revisions": _service(request).history(app_id)})


async def status(request: web.Request) -> web.Response:
    return _json(await _service(request).status(request.match_info["id"]))


async def endpoints(request: web.Request) -> web.StreamResponse:
    service, app_id = _service(request), request.match_info["id"]
    found, changed = service.endpoints(app_id)
    watch = request.query.get("watch", "").lower()
    if watch not in ("", "0", "false", "1", "true"):
        raise AppError(f"watch: must be true or false, got {watch!r}")
    if watch not in ("1", "true"):
        return _json({"app": app_id, "endpoints": [endpoint_json(e) for e in found]})
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
