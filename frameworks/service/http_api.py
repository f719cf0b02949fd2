"""A service's HTTP API on aiohttp: JSON in and out, errors as ``{"error": "..."}``, the caller's
principal from its client certificate, ``/v1/health`` and ``/metrics`` for every service.

- ``build_api(...)`` makes the ``web.Application``; the service adds its routes to it.
- An exception a handler raises becomes an answer: ``ApiError`` (and its ``BadRequest`` 400,
  ``Forbidden`` 403, ``NotFound`` 404) with its status; an exception type the service maps in
  ``errors`` (e.g. ``{AppError: 400}``) with that status; ``web.HTTPException`` with its own;
  anything else 500, logged, and the service goes on.
- ``read_json``/``json_object``/``known_fields`` read a body, naming what is wrong (400).
- Over TLS the handshake already refused a certificate of another CA, or none; with
  ``require_role`` a caller whose certificate lacks that role gets 403 on every route but
  ``/v1/health`` and ``/metrics``. ``caller(request)`` is who called (``Caller``).
- ``STOPPING`` is set when the service stops, so long answers (watches) end.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog
from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from corral.frameworks.sdk.json_input import BadJson, read_json_body
from corral.frameworks.sdk.tls import peer_roles

log = structlog.get_logger("corral.service")

MAX_BODY_BYTES = 1 << 20
# Set when the service stops, so watches end instead of holding the shutdown up.
STOPPING: web.AppKey[asyncio.Event] = web.AppKey("stopping", asyncio.Event)
METRICS: web.AppKey[CollectorRegistry] = web.AppKey("metrics", CollectorRegistry)
OPEN_PATHS = frozenset({"/v1/health", "/metrics"})  # no certificate role needed

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class ApiError(Exception):
    status = 500

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        if status is not None:
            self.status = status


class BadRequest(ApiError):
    status = 400


class Forbidden(ApiError):
    status = 403


class NotFound(ApiError):
    status = 404


class Gate:
    """Whether this process leads: a standby answers 503 naming the leader's URL on every route
    but the open ones (``OPEN_PATHS``), so a client goes there."""

    def __init__(self) -> None:
        self.leading = False
        self.leader: Callable[[], str | None] = lambda: None


@dataclass(frozen=True, slots=True)
class Caller:
    """Who called: its certificate's common name and ``corral:ROLE`` roles; ``secure`` False
    over plain text (``--insecure``: nobody can be told apart)."""

    name: str
    roles: frozenset[str]
    secure: bool

    def __str__(self) -> str:
        return self.name or "(anonymous)"


def caller(request: web.Request) -> Caller:
    transport = request.transport
    ssl_object = transport.get_extra_info("ssl_object") if transport else None
    if ssl_object is None:
        return Caller("", frozenset(), False)
    name, roles = peer_roles(transport.get_extra_info("peercert") if transport else None)
    return Caller(name, roles, True)


def json_response(data: Any, status: int = 200) -> web.Response:
    return web.json_response(data, status=status, dumps=lambda d: json.dumps(d, indent=2))


def error_response(status: int, message: str) -> web.Response:
    return json_response({"error": message}, status)


async def read_json(request: web.Request, required: bool = True) -> Any:
    """The body as JSON; ``{}`` for an empty body unless ``required``. Read with the one
    bounded reader every Corral HTTP API shares (size and nesting depth: json_input), so a
    body nested past the bound is a 400 that names it and one past the size a 413."""
    try:
        body = await read_json_body(request)
    except BadJson as err:
        raise ApiError(f"body: {err}", err.status) from None
    if body is None:
        if required:
            raise BadRequest("body: a JSON object is required")
        return {}
    return body


def json_object(value: Any, where: str = "body") -> dict[str, Any]:
    if not isinstance(value, dict):
        raise BadRequest(f"{where}: must be a JSON object, got {type(value).__name__}")
    return value


def known_fields(body: Mapping[str, Any], known: Iterable[str], where: str = "body") -> None:
    names = sorted(known)
    unknown = sorted(set(body) - set(names))
    if unknown:
        raise BadRequest(f"{where}: unknown field {unknown[0]!r} (known: {', '.join(names)})")


def build_api(
    name: str,
    *,
    errors: Mapping[type[Exception], int] | None = None,
    require_role: str | None = None,
    health: Callable[[], Mapping[str, Any]] = dict,
    gate: Gate | None = None,
) -> web.Application:
    """The API of service ``name`` (the metrics' label) with ``/v1/health`` (``{"ok": true}``
    and what ``health()`` adds) and ``/metrics``; the service adds its own routes."""
    registry = CollectorRegistry()
    requests = Counter(
        "corral_service_requests",
        "HTTP requests answered, by route and status",
        ["service", "method", "route", "status"],
        registry=registry,
    )
    gate = gate or Gate()
    middlewares = [_metrics(name, requests), _errors(dict(errors or {})), _leader_only(name, gate)]
    if require_role is not None:
        middlewares.append(_role_check(name, require_role))
    app = web.Application(middlewares=middlewares, client_max_size=MAX_BODY_BYTES)
    app[STOPPING] = asyncio.Event()
    app[METRICS] = registry

    async def health_route(request: web.Request) -> web.Response:
        if not gate.leading:
            return json_response({"ok": True, "leading": False, "leader": gate.leader()})
        return json_response({"ok": True, "leading": True, **health()})

    app.router.add_get("/v1/health", health_route)
    app.router.add_get("/metrics", _metrics_route)
    return app


async def _metrics_route(request: web.Request) -> web.Response:
    body = generate_latest(request.app[METRICS])
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


def _metrics(name: str, requests: Counter) -> Any:
    @web.middleware
    async def count(request: web.Request, handler: Handler) -> web.StreamResponse:
        response = await handler(request)
        info = request.match_info.route.resource
        route = info.canonical if info is not None else "(none)"
        requests.labels(name, request.method, route, str(response.status)).inc()
        return response

    return count


def _leader_only(name: str, gate: Gate) -> Any:
    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        if gate.leading or request.path in OPEN_PATHS:
            return await handler(request)
        leader = gate.leader()
        where = f"the leader is at {leader}" if leader else "no leader is known yet"
        response = json_response(
            {"error": f"this {name} service is a standby: {where}", "leader": leader}, 503
        )
        if leader:
            response.headers["Location"] = leader + request.path_qs
        return response

    return check


def _role_check(name: str, role: str) -> Any:
    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path not in OPEN_PATHS:
            who = caller(request)
            if role not in who.roles:
                return error_response(
                    403,
                    f"principal {who.name or '(none)'} may not use the {name} service: its "
                    f"certificate's roles are {', '.join(sorted(who.roles)) or 'none'}, not "
                    f"{role}",
                )
        return await handler(request)

    return check


def _errors(mapped: dict[type[Exception], int]) -> Any:
    @web.middleware
    async def answer(request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            return await handler(request)
        except ApiError as err:
            return error_response(err.status, str(err))
        except web.HTTPException as err:
            if err.status >= 400:
                return error_response(err.status, err.reason)
            raise
        except Exception as err:
            status = next((s for t, s in mapped.items() if isinstance(err, t)), None)
            if status is not None:
                return error_response(status, str(err))
            log.exception("request failed", method=request.method, path=request.path)
            return error_response(500, "internal error (see the service's log)")

    return answer
