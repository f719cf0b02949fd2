"""Who may ask what of the master's HTTP port (TLS only; a plain-text master asks nothing).

Every request to a route of master/endpoints.py's table is made by a principal: the client
certificate the TLS handshake verified (curl, tools), else a bearer token the master issued
(tokens.py: ``Authorization: Bearer TOKEN``, or the ``corral_token`` cookie that ``/login``
sets for a browser). Without either, the answer is 401 (the page: a redirect to ``/login``);
a principal the ACLs do not grant the route's endpoint gets 403 naming the rule, counted and
recorded as a Denied event like a gRPC refusal. ``/health`` and ``/login`` are public.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from corral.acl import ANONYMOUS, Principal
from corral.master import audit, tokens
from corral.master.core.refusals import Denied
from corral.master.endpoints import HTTP_ROUTES, PUBLIC, group_of
from corral.master.principals import principal_of_peer
from corral.master.runtime import MasterRuntime

COOKIE = "corral_token"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _token(request: web.Request) -> str:
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer" and value:
        return value.strip()
    return request.cookies.get(COOKIE, "")


def principal_of_request(request: web.Request, key: bytes, now: float) -> Principal:
    """The request's principal: its verified client certificate's, else its token's."""
    transport = request.transport
    peer = principal_of_peer(transport.get_extra_info("peercert") if transport else None)
    if peer.name:
        return peer
    token = _token(request)
    found = tokens.verify(key, token, now) if token else None
    return found or ANONYMOUS


def auth_middleware(runtime: MasterRuntime) -> Any:
    @web.middleware
    async def authorize(request: web.Request, handler: Handler) -> web.StreamResponse:
        key = runtime.token_key
        if key is None:
            return await handler(request)  # plain text: no principals (--insecure)
        resource = request.match_info.route.resource
        method = "GET" if request.method == "HEAD" else request.method
        endpoint = HTTP_ROUTES.get((method, resource.canonical)) if resource else None
        if endpoint is None or endpoint == PUBLIC:
            return await handler(request)  # public, or a 404/405 aiohttp answers itself
        principal = principal_of_request(request, key, runtime.clock())
        if not principal.name:
            if request.path == "/":
                raise web.HTTPSeeOther("/login")
            return web.json_response(
                {
                    "error": "no client certificate and no valid token: present a certificate "
                    "(curl --cert/--key/--cacert) or a token from `corral token` "
                    "(Authorization: Bearer TOKEN)"
                },
                status=401,
                headers={"WWW-Authenticate": 'Bearer realm="corral"'},
            )
        group = group_of(endpoint)
        denial = (
            runtime.acl.unlisted(principal, endpoint)
            if group is None
            else runtime.acl.call(principal, endpoint, group)
        )
        if denial is not None:
            audit.deny(runtime, Denied(denial, principal.name), runtime.stimulus("denied"))
            return web.json_response({"error": denial.message}, status=403)
        return await handler(request)

    return authorize


_LOGIN = """<!doctype html>
<html><head><meta charset="utf-8"><title>Corral: sign in</title></head>
<body><h1>Corral master</h1>
<p>{message}</p>
<form method="post" action="/login">
<label>Token (from <code>corral token</code>): <input name="token" type="password" size="60"
autocomplete="off"></label> <button type="submit">Sign in</button>
</form></body></html>
"""


def add_login(app: web.Application, runtime: MasterRuntime) -> None:
    """``/login``: a form for a token; a valid one is kept in a cookie the page then sends."""

    async def form(_request: web.Request) -> web.Response:
        message = "This page needs a token: run <code>corral token</code> and paste it here."
        return web.Response(text=_LOGIN.format(message=message), content_type="text/html")

    async def login(request: web.Request) -> web.StreamResponse:
        key = runtime.token_key
        data = await request.post()
        token = str(data.get("token", "")).strip()
        principal = tokens.verify(key, token, runtime.clock()) if key and token else None
        if principal is None:
            text = _LOGIN.format(message="That token is not valid (or has expired).")
            return web.Response(text=text, content_type="text/html", status=401)
        response = web.HTTPSeeOther("/")
        response.set_cookie(COOKIE, token, secure=True, httponly=True, samesite="Strict", path="/")
        return response

    app.router.add_get("/login", form)
    app.router.add_post("/login", login)
