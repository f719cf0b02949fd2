"""Operators' actions and tasks' files over the master's HTTP port (the Operator API's
KillTasks, TeardownFramework, Cordon, Uncordon, Drain, DeleteAgent and ReadTaskFile; gRPC
first, this second, the CLI third).

    POST   /api/v1/tasks/kill                 {"task_ids": [...], "framework_id": "",
                                               "grace_seconds": S}  (the last two optional)
    POST   /api/v1/frameworks/{id}/teardown
    POST   /api/v1/agents/{id}/cordon | uncordon | drain   (drain: {"grace_seconds": S})
    DELETE /api/v1/agents/{id}
    GET    /api/v1/tasks/{id}/files/{path}?framework_id=&tail=N&offset=B&follow=true

Who asked: the ``X-Corral-Operator`` header and the caller's address (master/security/requester.py).
Bad input is a 400 with ``{"error": reason}``; a refusal keeps its meaning (404, 409, 503).
A file is sent as it is read (chunked ``application/octet-stream``); a refusal found once the
body has started ends the body with a line ``corral: REASON``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from aiohttp import web

from corral.json_input import read_json_body
from corral.limits import MAX_ID_LENGTH, MAX_IDS_PER_CALL, echo
from corral.master import task_files
from corral.master.core import events as ev
from corral.master.core.refusals import CallRejected, Refusal
from corral.master.core.types import Requester
from corral.master.runtime import MasterRuntime
from corral.master.security.http_auth import principal_of_http
from corral.master.security.requester import BadRequester

HTTP_STATUS: dict[Refusal, int] = {
    Refusal.INVALID_ARGUMENT: 400,
    Refusal.NOT_FOUND: 404,
    Refusal.FAILED_PRECONDITION: 409,
    Refusal.PERMISSION_DENIED: 403,
    Refusal.RESOURCE_EXHAUSTED: 429,
    Refusal.DEADLINE_EXCEEDED: 504,
    Refusal.UNAVAILABLE: 503,
    Refusal.INTERNAL: 500,
}
FILE_QUERY = ("framework_id", "tail", "offset", "follow")


class BadInput(ValueError):
    """A 400 with this reason."""


def _refused(reason: str, status: int = 400) -> web.Response:
    return web.json_response({"error": reason}, status=status)


async def _body(request: web.Request, allowed: Iterable[str]) -> dict[str, Any]:
    """The JSON object body (empty: {}); BadInput naming what is wrong (BadJson, which the
    app's middleware answers, when json_input refuses it)."""
    body = await read_json_body(request)
    if body is None:
        return {}
    if not isinstance(body, dict):
        raise BadInput("the body must be a JSON object")
    unknown = sorted(set(body) - set(allowed))
    if unknown and not allowed:
        raise BadInput(f"unknown field {echo(unknown[0])}: this call takes no body")
    if unknown:
        raise BadInput(f"unknown field {echo(unknown[0])}; the fields are {', '.join(allowed)}")
    return body


def _grace(body: dict[str, Any]) -> float | None:
    g = body.get("grace_seconds")
    if g is None:
        return None
    if isinstance(g, bool) or not isinstance(g, int | float) or not math.isfinite(g) or g < 0:
        raise BadInput(f"grace_seconds must be a number >= 0, got {json.dumps(g)[:64]}")
    return float(g)


def _id(value: Any, what: str) -> str:
    if not isinstance(value, str) or len(value) > MAX_ID_LENGTH:
        raise BadInput(f"{what} must be a string of at most {MAX_ID_LENGTH} characters")
    return value


def add_routes(app: web.Application, runtime: MasterRuntime) -> None:
    def requester(request: web.Request) -> Requester:
        try:
            return runtime.requesters.of_http(request)
        except BadRequester as exc:
            raise BadInput(str(exc)) from None

    def base(kind: str, request: web.Request) -> dict[str, Any]:
        return {
            "stimulus_id": runtime.stimulus(kind),
            "now": runtime.clock(),
            "requester": requester(request),
        }

    def action(
        make: Callable[[web.Request], Awaitable[ev.Event]],
        reply: Callable[[ev.Event, Any], dict[str, Any]],
    ) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def handle(request: web.Request) -> web.Response:
            try:
                event = await make(request)
                answer = await runtime.call(event)
            except BadInput as exc:
                return _refused(str(exc))
            except CallRejected as exc:
                return _refused(exc.message, HTTP_STATUS[exc.code])
            return web.json_response(reply(event, answer))

        return handle

    async def kill(request: web.Request) -> ev.Event:
        body = await _body(request, ("task_ids", "framework_id", "grace_seconds"))
        ids = body.get("task_ids")
        if not isinstance(ids, list) or not ids or len(ids) > MAX_IDS_PER_CALL:
            raise BadInput(f'"task_ids" must be a list of 1 to {MAX_IDS_PER_CALL} task ids')
        framework_id = _id(body.get("framework_id", ""), "framework_id")
        return ev.KillTasks(
            **base("kill-tasks", request),
            tasks=tuple((framework_id, _id(t, "a task id")) for t in ids),
            grace_seconds=_grace(body),
        )

    def killed(_e: ev.Event, answered: Any) -> dict[str, Any]:
        return {
            "tasks": [
                {"task_id": t, "framework_id": f, "agent_id": a, "outcome": o}
                for t, f, a, o in answered
            ]
        }

    async def teardown(request: web.Request) -> ev.Event:
        await _body(request, ())
        return ev.TeardownFramework(
            **base("teardown", request), framework_id=request.match_info["framework_id"]
        )

    def maintenance_action(kind: type[ev.Cordon | ev.Uncordon | ev.Drain]) -> Any:
        async def make(request: web.Request) -> ev.Event:
            agent_id = request.match_info["agent_id"]
            if kind is ev.Drain:
                body = await _body(request, ("grace_seconds",))
                return ev.Drain(
                    **base("drain", request), agent_id=agent_id, grace_seconds=_grace(body)
                )
            await _body(request, ())
            return kind(**base(kind.__name__.lower(), request), agent_id=agent_id)

        return make

    def maintained(e: ev.Event, answer: Any) -> dict[str, Any]:
        m, tasks_killed = answer
        return {
            "agent_id": getattr(e, "agent_id", ""),
            "maintenance": None
            if m is None
            else {
                "mode": m.mode,
                "since": m.since,
                "requested_by": m.requested_by,
                "grace_seconds": m.grace_seconds,
            },
            "tasks_killed": list(tasks_killed),
        }

    async def delete_agent(request: web.Request) -> ev.Event:
        return ev.DeleteAgent(
            **base("delete-agent", request), agent_id=request.match_info["agent_id"]
        )

    async def read_file(request: web.Request) -> web.StreamResponse:
        try:
            q = _file_query(request.query.items())
        except BadInput as exc:
            return _refused(str(exc))
        stream = task_files.chunks(
            runtime,
            principal_of_http(runtime, request),
            q["framework_id"],
            request.match_info["task_id"],
            request.match_info["path"],
            q["offset"],
            q["tail"],
            q["follow"],
        )
        response: web.StreamResponse | None = None
        try:
            async for _where, _offset, data in stream:
                if response is None:
                    response = web.StreamResponse(
                        headers={"Content-Type": "application/octet-stream"}
                    )
                    response.enable_chunked_encoding()
                    await response.prepare(request)
                await response.write(data)
        except CallRejected as exc:
            if response is None:
                return _refused(exc.message, HTTP_STATUS[exc.code])
            await response.write(f"\ncorral: {exc.message}\n".encode())
        if response is None:  # an empty file
            return web.Response(body=b"", content_type="application/octet-stream")
        await response.write_eof()
        return response

    app.router.add_post("/api/v1/tasks/kill", action(kill, killed))
    app.router.add_post(
        "/api/v1/frameworks/{framework_id}/teardown",
        action(teardown, lambda _e, n: {"tasks_killed": n}),
    )
    for verb, kind in (("cordon", ev.Cordon), ("uncordon", ev.Uncordon), ("drain", ev.Drain)):
        app.router.add_post(
            f"/api/v1/agents/{{agent_id}}/{verb}", action(maintenance_action(kind), maintained)
        )
    app.router.add_delete(
        "/api/v1/agents/{agent_id}", action(delete_agent, lambda _e, n: {"tasks_gone": n})
    )
    app.router.add_get("/api/v1/tasks/{task_id}/files/{path:.+}", read_file)


def _file_query(pairs: Iterable[tuple[str, str]]) -> dict[str, Any]:
    given: dict[str, str] = {}
    for name, value in pairs:
        if name not in FILE_QUERY:
            raise BadInput(
                f"unknown query parameter {echo(name)}; the parameters are {', '.join(FILE_QUERY)}"
            )
        if name in given:
            raise BadInput(f"{name} is given twice")
        given[name] = value
    out: dict[str, Any] = {"framework_id": given.get("framework_id", "")}
    for name in ("tail", "offset"):
        text = given.get(name, "0")
        if not text.isdigit() or len(text) > 15:
            raise BadInput(f"{name} must be a whole number >= 0, got {echo(text)}")
        out[name] = int(text)
    follow = given.get("follow", "false").lower()
    if follow not in ("true", "false"):
        raise BadInput(f"follow must be true or false, got {echo(follow)}")
    out["follow"] = follow == "true"
    return out
