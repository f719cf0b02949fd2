"""Every service on the scaffold (serving, jobs) reads a request body with the one bounded JSON
reader (json_input): a body nested past the bound is a 400 that says so, one past the size
bound a 413, and the service goes on answering. Over a real socket, as a client would send it."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from corral.frameworks.sdk import json_input
from corral.frameworks.service.http_api import Gate, build_api, json_response, read_json


@pytest.fixture
async def service_url() -> AsyncIterator[str]:
    gate = Gate()
    gate.leading = True
    app = build_api("test", gate=gate)

    async def echo(request: web.Request) -> web.Response:
        body: Any = await read_json(request)
        return json_response({"got": type(body).__name__})

    app.router.add_post("/v1/echo", echo)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


async def _post(url: str, body: bytes) -> tuple[int, dict[str, Any]]:
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            url + "/v1/echo", data=io.BytesIO(body), headers={"Content-Type": "application/json"}
        ) as r,
    ):
        return r.status, await r.json()


async def test_a_deeply_nested_body_is_a_400_naming_the_bound(service_url: str) -> None:
    status, answer = await _post(service_url, b"[" * 100_000 + b"]" * 100_000)
    assert status == 400, answer
    assert "nested more than 32 deep" in answer["error"]
    assert await _post(service_url, b'{"a": [1]}') == (200, {"got": "dict"})


async def test_a_body_past_the_size_bound_is_a_413(service_url: str) -> None:
    big = b"[" + b"1," * (json_input.MAX_JSON_BYTES // 2) + b"1]"
    status, answer = await _post(service_url, big)
    assert status == 413, answer
    assert "larger than 1048576 bytes" in answer["error"]


async def test_an_empty_or_broken_body_is_a_400_with_its_reason(service_url: str) -> None:
    status, answer = await _post(service_url, b"")
    assert (status, answer["error"]) == (400, "body: a JSON object is required")
    status, answer = await _post(service_url, b"{not json")
    assert status == 400 and "not JSON" in answer["error"], answer
