"""Who may ask what of the master's HTTP port (TLS only; a plain-text master asks nothing).

Every request to a route of master/security/endpoints.py's table is made by a principal: the client
certificate the TLS handshake verified (curl, tools), else a bearer token the master issued
(tokens.py: ``Authorization: Bearer TOKEN``, or the ``corral_token`` cookie that ``/login``
sets for a browser). Without either, the answer is 401 (the page: a redirect to ``/login``);
a principal the ACLs do not grant the route's endpoint gets 403 naming the rule, counted and
recorded as a Denied event like a gRPC refusal. ``/health`` and ``/login`` are public.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from corral.acl import ANONYMOUS, Principal
from corral.master.core.refusals import Denied
from corral.master.http import login_page
from corral.master.security import audit, tokens
from corral.master.security.endpoints import HTTP_ROUTES, PUBLIC, guard_denial
from corral.master.security.principals import principal_of_peer

if TYPE_CHECKING:  # the runtime imports this module (through requester.py)
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


def principal_of_http(runtime: MasterRuntime, request: web.Request) -> Principal:
    """The request's principal; ANONYMOUS on a plain-text master (--insecure: no principals)."""
    key = runtime.token_key
    return principal_of_request(request, key, runtime.clock()) if key is not None else ANONYMOUS


def auth_middleware(runtime: MasterRuntime) -> Any:
    @web.middleware
    async def authorize(request: web.Request, handler: Handler) -> web.StreamResponse:
        key = runtime.token_key
        if key is None:
            return await handler(request)  # plain text: no principals (--insecure)
        resource = request.match_info.route.resource
        method = "GET" if request.method == "HEAD" else request.method
        route = (method, resource.canonical) if resource else None
        endpoint = HTTP_ROUTES.get(route) if route else None
        if endpoint is None or endpoint == PUBLIC:
            return await handler(request)  # public, or a 404/405 aiohttp answers itself
        principal = principal_of_request(request, key, runtime.clock())
        if not principal.name:
            if request.path == "/":
                # A cookie that no longer verifies is a session that ended: the form says so.
                ended = "?session=expired" if request.cookies.get(COOKIE) else ""
                raise web.HTTPSeeOther("/login" + ended)
            return web.json_response(
                {
                    "error": "no client certificate and no valid token: present a certificate "
                    "(curl --cert/--key/--cacert) or a token from `corral token` "
                    "(Authorization: Bearer TOKEN)"
                },
                status=401,
                headers={"WWW-Authenticate": 'Bearer realm="corral"'},
            )
        denial = guard_denial(runtime.acl, principal, endpoint, route)
        if denial is not None:
            audit.deny(runtime, Denied(denial, principal.name), runtime.stimulus("denied"))
            if request.path == "/":  # a browser: a page that says so, not JSON
                return login_page.refused(denial.message)
            return web.json_response({"error": denial.message}, status=403)
        return await handler(request)

    return authorize


def add_login(app: web.Application, runtime: MasterRuntime) -> None:
    """``/login``: a form for a token; a valid one is kept in a cookie the page then sends;
    ``/logout`` drops the cookie; ``/api/v1/whoami`` tells the page whom it is signed in as.
    ``?session=expired`` says the page's token stopped working; ``next`` is the page's route
    to return to (login_page.py)."""

    async def form(request: web.Request) -> web.Response:
        session = request.query.get("session")
        message = {"expired": login_page.EXPIRED, "signed-out": login_page.SIGNED_OUT}.get(
            session or "", login_page.ASK
        )
        return login_page.form(message, request.query.get("next", ""))

    async def logout(_request: web.Request) -> web.StreamResponse:
        # The cookie goes; the token itself stays valid until it expires (tokens are not
        # kept by the master, so there is nothing to revoke: a short --ttl bounds it).
        response = web.HTTPSeeOther("/login?session=signed-out")
        response.del_cookie(COOKIE, path="/")
        return response

    async def whoami(request: web.Request) -> web.Response:
        """Who the master takes this request for, and whether by the page's cookie (the page
        then offers to sign out); public: it tells a caller only about itself."""
        key = runtime.token_key
        cookie = request.cookies.get(COOKIE, "")
        session = (
            key is not None
            and bool(cookie)
            and tokens.verify(key, cookie, runtime.clock()) is not None
        )
        return web.json_response(
            {
                "principal": principal_of_http(runtime, request).name,
                "session": session,
                "tls": key is not None,
            }
        )

    async def login(request: web.Request) -> web.StreamResponse:
        key = runtime.token_key
        try:
            data = await request.post()
        except (ValueError, HttpProcessingError):  # a body that is not a form: said, not a 500
            return login_page.form(login_page.UNREADABLE, "", status=400)
        token = str(data.get("token", "")).strip()
        route = login_page.route_of(str(data.get("next", "")))
        principal = tokens.verify(key, token, runtime.clock()) if key and token else None
        if principal is None:
            return login_page.form(login_page.INVALID, route, status=401)
        response = web.HTTPSeeOther("/" + route)
        response.set_cookie(COOKIE, token, secure=True, httponly=True, samesite="Strict", path="/")
        return response

    app.router.add_get("/login", form)
    app.router.add_post("/login", login)
    app.router.add_post("/logout", logout)
    app.router.add_get("/api/v1/whoami", whoami)
