"""master/http/json_stream.py: a large JSON answer written in pieces, the loop let go between."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
from aiohttp import web

from corral.master.http.json_stream import pieces, write_json

STATE: dict[str, Any] = {
    "master_id": "m-1",
    "agents": [{"id": f"a{i}", "used": {"cpus": i / 3}, "name": 'é"\n'} for i in range(23)],
    "frameworks": [],
    "tasks": [{"id": "t", "labels": {}}] * 5,
    "summary": {"agents_active": 23},
}


def test_the_pieces_joined_are_exactly_json_dumps() -> None:
    for chunk in (1, 4, 5, 22, 23, 500):
        assert "".join(pieces(STATE, chunk)) == json.dumps(STATE), chunk
    assert "".join(pieces({}, 2)) == json.dumps({})
    assert "".join(pieces({"only": [1, 2, 3]}, 1)) == json.dumps({"only": [1, 2, 3]})


def test_long_lists_go_a_chunk_at_a_time() -> None:
    got = list(pieces(STATE, 5))
    # "{", master_id, the agents' head, 5 pieces of at most 5, "]", the rest one piece each.
    assert len(got) == 1 + 1 + 1 + 5 + 1 + 3 + 1
    assert max(len(p) for p in got) < len(json.dumps(STATE["agents"])) / 4


async def test_the_loop_runs_other_work_between_the_pieces() -> None:
    value = {"agents": [{"i": i} for i in range(50 * 500)]}  # 50 pieces of the list
    turns = 0
    streaming = False
    turns_while_streaming = 0

    async def other_work() -> None:
        nonlocal turns, turns_while_streaming
        while True:
            turns += 1
            turns_while_streaming += streaming
            await asyncio.sleep(0)

    async def handler(request: web.Request) -> web.StreamResponse:
        nonlocal streaming
        streaming = True
        try:
            return await write_json(request, value)
        finally:
            streaming = False

    app = web.Application()
    app.router.add_get("/state", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    worker = asyncio.get_running_loop().create_task(other_work())
    try:
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"http://127.0.0.1:{port}/state") as r,
        ):
            assert r.status == 200
            assert r.headers["Content-Type"] == "application/json; charset=utf-8"
            assert r.headers.get("Transfer-Encoding") == "chunked"
            assert await r.json() == value
    finally:
        worker.cancel()
        await asyncio.gather(worker, return_exceptions=True)
        await runner.cleanup()
    # Let go after every piece: the other work ran at least once per piece meanwhile.
    assert turns_while_streaming >= 50, turns_while_streaming
