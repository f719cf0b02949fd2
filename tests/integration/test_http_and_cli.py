"""The master's HTTP port and the operator CLI against a real cluster."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from corral.frameworks import sdk
from corral.frameworks.sdk.testing import LocalCluster
from tests.integration.corral_cli import corral
from tests.integration.decliner import Decliner
from tests.master_http import master_session

pytestmark = pytest.mark.e2e


async def test_http_endpoints_and_cli(tmp_path: Any) -> None:
    async with LocalCluster(
        agents=1,
        agent_resources="cpus:2;mem:1024;disk:100",
        work_dir=tmp_path,
        # One agent at most 0.1 heartbeats/s: 10 s instead of 5, and a new agent is told the
        # growth headroom with it (ticks.py rule 3): 12.5 s.
        master_args=("--allocation-interval", "0.2", "--max-agent-heartbeats", "0.1"),
    ) as cluster:
        scheduler = Decliner()
        info = sdk.FrameworkInfo(name="decliner", role="*")
        async with sdk.Driver(scheduler, info, cluster.master) as driver:
            await asyncio.wait_for(scheduler.offered.wait(), 20)
            base = f"{cluster.base_url}"
            async with master_session(cluster) as http:
                async with http.get(f"{base}/health") as r:
                    assert r.status == 200
                    assert (await r.json())["status"] == "ok"
                async with http.get(f"{base}/api/v1/state") as r:
                    state = await r.json()
                assert len(state["agents"]) == 1
                assert state["agents"][0]["resources"]["cpus"] == 2
                assert state["agents"][0]["heartbeat_interval"] == 12.5
                assert [f["name"] for f in state["frameworks"]] == ["decliner"]
                fid = driver.framework_id
                query = {"framework_id": fid, "completed": "false"}
                async with http.get(f"{base}/api/v1/state", params=query) as r:
                    mine = await r.json()
                assert [f["id"] for f in mine["frameworks"]] == [fid]
                assert all(o["framework_id"] == fid for o in mine["offers"])
                async with http.get(f"{base}/api/v1/state?framework_id=nope") as r:
                    assert r.status == 404 and "unknown framework" in (await r.json())["error"]
                async with http.get(f"{base}/api/v1/state?complete=false") as r:
                    assert r.status == 400 and "complete" in (await r.json())["error"]
                async with http.get(f"{base}/metrics") as r:
                    metrics = await r.text()
                assert "corral_allocation_cycle_seconds_count" in metrics
                assert "corral_agent_heartbeats_total" in metrics
                assert 'corral_agents{state="active"} 1.0' in metrics
                async with http.get(f"{base}/plain") as r:
                    page = await r.text()
                assert "1 active agents" in page
                # / is the web UI (docs/ui.md): its page loads its scripts from the master.
                async with http.get(f"{base}/") as r:
                    ui = await r.text()
                assert r.status == 200 and "/ui/static/js/app.js" in ui and "/plain" in ui
                fid = driver.framework_id
                async with http.get(f"{base}/api/v1/frameworks/{fid}/explain") as r:
                    explained = await r.json()
                assert explained["framework_id"] == fid
                assert explained["reasons"], explained  # the refuse filter holds it back
                async with http.get(f"{base}/api/v1/frameworks/nope/explain") as r:
                    assert r.status == 404

            got = await asyncio.to_thread(
                corral, "get", "agents", "-o", "json", "--master", cluster.master
            )
            assert got.returncode == 0, got.stderr
            agents = json.loads(got.stdout)
            assert agents[0]["resources"]["cpus"] == 2  # the shape of /api/v1/state
            table = await asyncio.to_thread(corral, "get", "frameworks", "--master", cluster.master)
            assert table.returncode == 0 and "decliner" in table.stdout
            why = await asyncio.to_thread(
                corral, "explain", fid, "-o", "json", "--master", cluster.master
            )
            assert why.returncode == 0, why.stderr
            assert json.loads(why.stdout)["framework_id"] == fid
            missing = await asyncio.to_thread(corral, "explain", "nope", "--master", cluster.master)
            assert missing.returncode == 1
            assert missing.stderr.count("\n") == 1 and "Traceback" not in missing.stderr


def test_cli_errors_are_one_line() -> None:
    down = corral("get", "agents", "--master", "127.0.0.1:1", "--timeout", "1")
    assert down.returncode == 1
    assert "Traceback" not in down.stderr and down.stderr.count("\n") == 1
    bad = corral("get", "agents", "--master", "not-an-address")
    assert bad.returncode == 2
    assert "is not HOST:PORT" in bad.stderr
    bad_res = corral("agent", "--resources", "cpus:-1")
    assert bad_res.returncode == 2 and "Traceback" not in bad_res.stderr


class Holder(sdk.Scheduler):
    """Keeps its offers unanswered: no refuse filter, so the reasons are the agents' own."""

    async def offers(self, driver: sdk.Driver, offers: list[sdk.Offer]) -> None:
        pass


async def test_a_demand_that_cannot_fit_shows_in_events(tmp_path: Any) -> None:
    async with LocalCluster(
        agents=1,
        agent_resources="cpus:2;mem:1024;disk:100",
        work_dir=tmp_path,
        master_args=("--allocation-interval", "0.2"),
    ) as cluster:
        info = sdk.FrameworkInfo(name="hungry", role="*")
        async with sdk.Driver(Holder(), info, cluster.master) as driver:
            await driver.set_demands([sdk.Demand("big", 2, cpus=8, mem=256)])
            fid = driver.framework_id
            base = f"{cluster.base_url}"
            expected = "0/1 agents: 1 insufficient cpus"
            async with master_session(cluster) as http:
                for _ in range(100):
                    query = {"reason": "FailedScheduling"}
                    async with http.get(f"{base}/api/v1/events", params=query) as r:
                        assert r.status == 200
                        failed = await r.json()
                    if failed:
                        break
                    await asyncio.sleep(0.1)
                assert [(e["subject"], e["message"], e["kind"]) for e in failed] == [
                    (f"{fid}/big", expected, "demand_unschedulable")
                ]
                assert failed[0]["object_kind"] == "demand"
                async with http.get(f"{base}/api/v1/events?reason=Nope") as r:
                    assert r.status == 400 and "unknown reason" in (await r.json())["error"]
                async with http.get(f"{base}/api/v1/events?kind=x") as r:
                    assert (
                        r.status == 400 and "unknown query parameter" in (await r.json())["error"]
                    )
                async with http.get(f"{base}/api/v1/frameworks/{fid}/explain") as r:
                    http_explained = await r.json()
                async with http.get(f"{base}/metrics") as r:
                    assert "corral_events_dropped_total 0.0" in await r.text()

            got = await asyncio.to_thread(
                corral,
                "events",
                "--reason",
                "FailedScheduling",
                "-o",
                "json",
                "--master",
                cluster.master,
            )
            assert got.returncode == 0, got.stderr
            events = json.loads(got.stdout)
            assert [(e["reason"], e["subject"], e["message"]) for e in events] == [
                ("FailedScheduling", f"{fid}/big", expected)
            ]
            text = await asyncio.to_thread(corral, "events", "--master", cluster.master)
            assert text.returncode == 0 and f"demand/{fid}/big  {expected}" in text.stdout
            why = await asyncio.to_thread(
                corral, "explain", fid, "-o", "json", "--master", cluster.master
            )
            cli_explained = json.loads(why.stdout)
            # One set of field names for the CLI's JSON and the HTTP JSON.
            assert set(cli_explained) == set(http_explained)
            assert (
                cli_explained["pending_demands"][0]["reasons"][0]["reason"] == "insufficient cpus"
            )


def test_events_cli_bad_input() -> None:
    bad = corral("events", "--reason", "Nope")
    assert bad.returncode == 2 and "unknown reason 'Nope'" in bad.stderr
    assert "FailedScheduling" in bad.stderr  # it lists the reasons
    bad_flag = corral("events", "--since", "1h")
    assert bad_flag.returncode == 2 and "unrecognized arguments" in bad_flag.stderr
    for follow in ((), ("--follow",)):
        down = corral("events", *follow, "--master", "127.0.0.1:1", "--timeout", "1")
        assert down.returncode == 1
        assert "Traceback" not in down.stderr and down.stderr.count("\n") == 1
