"""The web UI's node groups and queues views in a real browser (headless Chromium): a real TLS
master, a real `corral autoscaler` and a real `corral jobs serve` publishing their status to it
(tests/integration/test_service_status.py checks the same over the HTTP API). The operator signs
in, sees each node group with its bounds and template, each queue with its quota and the job
waiting in it with why; once the autoscaler stops, its view says its status is stale. The
screenshots are docs/ui.md's (CORRAL_UI_SCREENSHOTS=docs/ui)."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from corral.frameworks import sdk
from corral.frameworks.sdk.testing import LocalCluster
from tests.e2e.browser import chromium
from tests.e2e.test_web_ui import cluster_ca
from tests.integration.test_autoscaler import FAST, Batch, _agent_processes
from tests.integration.test_service_status import start_services
from tests.master_http import issue_token

pytestmark = pytest.mark.e2e

WAIT = 60.0


async def in_browser(fn: Callable[..., Any], *args: Any) -> Any:
    return await asyncio.to_thread(fn, *args)


async def test_the_node_groups_and_queues_views_show_what_the_services_publish(
    tmp_path: Path,
) -> None:
    async with LocalCluster(agents=0, work_dir=tmp_path / "cluster", master_args=FAST) as cluster:
        a, jobs = await start_services(tmp_path, cluster)
        try:
            token = await issue_token(cluster)
            with chromium(cluster.base_url, tmp_path, cluster_ca(cluster)) as b:
                await in_browser(b.open, "#/nodegroups")
                await in_browser(b.sign_in, token.value)
                shown = await in_browser(b.wait_text, "table.nodegroups", "gpu", WAIT)
                assert "small" in shown and "cpus:8;mem:8192;disk:0;gpus:2" in shown
                assert "zone=b" in shown
                page = await in_browser(b.text, "main")
                assert "Autoscaler autoscaler" in page and "published" in page
                assert "Stale" not in page
                # Work nothing can take: the autoscaler adds a node, and the view shows it,
                # its agent once registered, and the event that says why.
                work = Batch(count=2, seconds=600)
                async with sdk.Driver(work, sdk.FrameworkInfo(name="batch"), cluster.master) as d:
                    await d.set_demands([sdk.Demand("work", 2, cpus=1, mem=64)])
                    await in_browser(b.wait_text, "table.asevents", "TriggeredScaleUp", WAIT)
                    await in_browser(b.wait_text, "table.asnodes", "small-1", WAIT)
                    await in_browser(
                        b.wait, "document.querySelector('table.asnodes a')", "the node's agent"
                    )
                    await in_browser(b.screenshot, "nodegroups")

                await in_browser(b.go, "#/queues")
                shown = await in_browser(b.wait_text, "table.queues", "too-big", WAIT)
                assert "team-a" in shown and "cpus 4" in shown and "ml" in shown
                assert "team-b" in shown
                await in_browser(b.screenshot, "queues")

                # The autoscaler stops: within its ttl (three scans and a call's timeout) the
                # node groups view says its status is stale.
                a.stop()
                await in_browser(b.go, "#/nodegroups")
                await in_browser(b.wait_text, "main", "Stale", WAIT)
                errors = [e for e in await in_browser(b.errors) if "favicon" not in e]
                assert errors == []
        finally:
            a.stop()
            jobs.stop()
            for pid in _agent_processes(tmp_path, "as-state"):  # the node the autoscaler added
                os.killpg(pid, signal.SIGKILL)
