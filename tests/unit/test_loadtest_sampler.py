"""The load test's sampler counts a /metrics scrape that fails as a failure of the run, except one
cut by the test's own kill -9 of the leader (``--kill-leader-at`` clears the sampler's address as
it kills, at a second on which a sample falls too)."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest

from corral.loadtest import run
from corral.loadtest.collect import Collector


class _CutScrape:
    """``scrape.fetch`` that waits until let go, then fails as a reset connection does."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.go = asyncio.Event()

    async def __call__(self, session: Any, http: str, now: float) -> Any:
        self.started.set()
        await self.go.wait()
        raise aiohttp.ClientConnectionError("Connection reset by peer")


@pytest.mark.parametrize("killed_meanwhile", [True, False])
async def test_a_scrape_cut_by_the_leaders_kill_is_not_a_failure(
    monkeypatch: pytest.MonkeyPatch, killed_meanwhile: bool
) -> None:
    cut = _CutScrape()
    monkeypatch.setattr(run.scrape, "fetch", cut)
    sampler = run._Sampler(session=None, http="127.0.0.1:1", pid=None)  # type: ignore[arg-type]
    sampling = asyncio.create_task(sampler.sample(Collector()))
    async with asyncio.timeout(10):
        await cut.started.wait()
    if killed_meanwhile:
        sampler.http = None  # what _kill_leader_at does as it kills the leader
    cut.go.set()
    async with asyncio.timeout(10):
        await sampling
    assert sampler.failures == (0 if killed_meanwhile else 1)
