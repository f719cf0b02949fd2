"""The cluster page's agent list a page at a time, in headless Chromium (issue #48): a real master
(its HTTP port, runtime and loops, plain text) whose core is given 120 agents by registration
events (master/bench/synthetic_master.py: no agent processes, which are not what this checks;
tests/e2e/test_web_ui.py follows real agents). The page shows the master's counts and 50 agents
at a time in id order; Next and Previous move through them; a group lists only its agents."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from corral.master.bench.synthetic_master import agent_id, master_with_agents
from tests.e2e.browser import Browser, chromium

pytestmark = pytest.mark.e2e

AGENTS = 120
DASH = "\N{EN DASH}"  # as the pager writes "Rows 1 to 50"


async def in_browser(fn: Callable[..., Any], *args: Any) -> Any:
    return await asyncio.to_thread(fn, *args)


def shown_ids(b: Browser) -> list[str]:
    found = b.js(
        "return [...document.querySelectorAll('table.agents tbody tr th .mono')]"
        ".map((e) => e.innerText)"
    )
    return [str(x) for x in found]


def wait_first(b: Browser, first: str) -> None:
    b.wait(
        "(document.querySelector('table.agents tbody tr th .mono') || {}).innerText"
        " === arguments[0]",
        f"the agents' page starting at {first}",
        30,
        first,
    )


async def test_the_agent_list_pages_through_every_agent(tmp_path: Path) -> None:
    master = await master_with_agents(AGENTS, zones=3)
    try:
        with chromium(f"http://{master.http_address}", tmp_path) as b:
            await in_browser(b.open, "#/cluster")
            await in_browser(b.wait_text, ".counts", f"{AGENTS} ✓ active")
            await in_browser(b.wait_text, "nav.pager", f"Rows 1{DASH}50 of {AGENTS}")
            seen = await in_browser(shown_ids, b)
            in_order = sorted(agent_id(i) for i in range(AGENTS))
            for start in (50, 100):
                await in_browser(b.click, "nav.pager button:last-child")  # Next →
                await in_browser(wait_first, b, in_order[start])
                await in_browser(b.wait_text, "nav.pager", f"Rows {start + 1}{DASH}")
                seen += await in_browser(shown_ids, b)
            assert seen == in_order  # each once, in id order
            assert await in_browser(
                b.js, "return document.querySelector('nav.pager button:last-child').disabled"
            )
            await in_browser(b.click, "nav.pager button:first-child")  # ← Previous
            await in_browser(wait_first, b, in_order[50])

            # A group's agents only, from its first page.
            await in_browser(b.click, "table.groups tbody tr:nth-child(2) th button")
            await in_browser(b.wait_text, "nav.pager", f"Rows 1{DASH}40 of 40")
            in_zone = await in_browser(shown_ids, b)
            assert in_zone == sorted(agent_id(i) for i in range(1, AGENTS, 3))
            # A plain-text master has no sign-in, so no /api/v1/whoami (the page shows no one).
            errors = [e for e in await in_browser(b.errors) if "/api/v1/whoami" not in e]
            assert errors == []
    finally:
        await master.stop()
