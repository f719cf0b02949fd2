"""The page's live state in a real browser, when the stream goes live before the page's
components have subscribed to it.

A component subscribes to the live feed in an effect, which Preact runs after the browser
paints. On a busy machine the stream's first answers can arrive before that: the header then
said "connecting…" for good, though the stream was live (seen in CI, after a sign-in). Here
the browser runs the page's effects two seconds late (Preact's ``options.requestAnimationFrame``,
set before the page renders), which makes that order certain rather than a matter of luck.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from corral.frameworks.sdk.testing import LocalCluster
from tests.e2e.browser import chromium
from tests.e2e.test_web_ui import cluster_ca, in_browser
from tests.master_http import issue_token

pytestmark = pytest.mark.e2e

EFFECTS_LATE_MS = 2000

# Run on every new document, before its own scripts; only the page itself (path /) is touched.
DELAY_EFFECTS = f"""
if (location.pathname === "/") {{
  import("/ui/static/vendor/preact/preact.js").then(({{ options }}) => {{
    window.delayedBeforeRender = !document.querySelector("#app header");
    options.requestAnimationFrame = (flush) => setTimeout(() => {{
      import("/ui/static/js/live.js").then(({{ live }}) => {{
        if (!window.statusAtFirstEffects) window.statusAtFirstEffects = live.status;
        flush();
      }});
    }}, {EFFECTS_LATE_MS});
  }});
}}
"""


async def test_the_header_says_live_when_the_stream_went_live_before_it_subscribed(
    tmp_path: Path,
) -> None:
    async with LocalCluster(agents=0, work_dir=tmp_path / "cluster") as cluster:
        token = await issue_token(cluster)
        with chromium(cluster.base_url, tmp_path, cluster_ca(cluster)) as b:
            await in_browser(b.open, "#/cluster")
            await in_browser(b.sign_in, token.value)
            await in_browser(
                b.driver.execute_cdp_cmd,
                "Page.addScriptToEvaluateOnNewDocument",
                {"source": DELAY_EFFECTS},
            )
            await in_browser(b.open, "#/cluster")
            await in_browser(b.wait, "window.statusAtFirstEffects", "the page's first effects")
            # The order this test is about: effects held back from the first render on, and
            # the stream live by the time they ran.
            assert await in_browser(b.js, "return window.delayedBeforeRender") is True
            assert await in_browser(b.js, "return window.statusAtFirstEffects") == "live"
            await in_browser(b.wait, "document.querySelector('.live-live')", "the header's 'live'")
            assert "live" in await in_browser(b.text, "[role=status]")
            assert await in_browser(b.errors) == []
