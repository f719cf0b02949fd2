"""The web UI's JSON endpoints and live stream on a real master with real agents: pages and
filters give what they say, bad input is a 400 naming it, a missing object a 404, and the
stream carries the cluster events the runtime's watch sees (docs/ui.md).

The master is a secure one (TLS, the local CA): the endpoints answer a client certificate, as
curl with the operator credential is, and the page's own way in, the cookie /login sets from a
token of `corral token`; without either they answer 401 and the page itself sends the browser
to /login (docs/security.md, "The web page and curl").
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from corral import pki
from corral.frameworks import sdk
from corral.frameworks.sdk import tls as sdk_tls
from corral.frameworks.sdk.testing import LocalCluster
from tests.master_http import browser_session, issue_token, master_session

pytestmark = pytest.mark.e2e

WAIT = 30.0


async def get(http: aiohttp.ClientSession, url: str) -> tuple[int, Any]:
    async with http.get(url) as r:
        return r.status, await r.json()


async def test_pages_filters_and_bad_input(tmp_path: Path) -> None:
    async with LocalCluster(
        agents=0,
        work_dir=tmp_path,
        master_args=("--allocation-interval", "0.2"),
        agent_args=("--simulate",),
    ) as cluster:
        for i in range(5):
            zone = "a" if i < 3 else "b"
            resources = "cpus:2;mem:512;disk:10"
            await cluster.add_agent(f"agent-{i}", resources, attributes={"zone": zone})
        await cluster.wait_for_agents(5, WAIT)
        base = cluster.url("/api/v1")
        async with master_session(cluster) as http:
            status, page = await get(http, f"{base}/agents?limit=2")
            assert status == 200 and page["total"] == 5 and len(page["items"]) == 2
            ids = [a["id"] for a in page["items"]]
            assert ids == sorted(ids)
            status, rest = await get(http, f"{base}/agents?limit=2&offset=4")
            assert [len(rest["items"]), rest["offset"]] == [1, 4]
            status, zone_b = await get(http, f"{base}/agents?group_by=zone&group=b")
            assert zone_b["total"] == 2
            assert {a["attributes"]["zone"] for a in zone_b["items"]} == {"b"}

            status, overview = await get(http, f"{base}/cluster")
            assert overview["group_by"] == "zone"  # the default when agents have a zone
            groups = {g["key"]: g for g in overview["groups"]}
            assert groups["a"]["agents"] == 3 and groups["b"]["total"]["cpus"] == 4
            assert overview["by_status"]["active"] == 5
            status, flat = await get(http, f"{base}/cluster?group_by=")
            assert [g["key"] for g in flat["groups"]] == ["all agents"]

            for url, needle in [
                (f"{base}/agents?limit=0", "limit must be between 1 and 1000"),
                (f"{base}/agents?limit=x", "limit must be an integer"),
                (f"{base}/agents?offset=-1", "offset must be between"),
                (f"{base}/agents?status=busy", "status must be one of"),
                (f"{base}/agents?sort=age", "sort must be one of"),
                (f"{base}/agents?group=a", "group needs group_by"),
                (f"{base}/agents?limt=5", "unknown query parameter 'limt'"),
                (f"{base}/agents?limit=5&limit=6", "limit is given twice"),
                (f"{base}/tasks?state=running", "state must be one of"),
                (f"{base}/tasks?completed=maybe", "completed must be true or false"),
                (f"{base}/frameworks?state=gone", "state must be one of"),
                (f"{base}/stream?reason=Nope", "unknown reason 'Nope'"),
                (f"{base}/stream?events=maybe", "events must be true or false"),
                (f"{base}/agents/{ids[0]}?x=1", "unknown query parameter 'x'"),
                (f"{base}/agents?q=" + "x" * 300, "longer than 256 characters"),
            ]:
                status, body = await get(http, url)
                assert status == 400 and needle in body["error"], (url, status, body)
            for url, needle in [
                (f"{base}/agents/nope", "unknown agent"),
                (f"{base}/tasks/nope", "unknown task"),
                (f"{base}/frameworks/nope", "unknown framework"),
                (f"{base}/pending?framework_id=nope", "unknown framework"),
            ]:
                status, body = await get(http, url)
                assert status == 404 and needle in body["error"], (url, status, body)

            status, agent = await get(http, f"{base}/agents/{ids[0]}")
            assert agent["id"] == ids[0] and agent["status"] == "active"
            assert any(e["reason"] == "AgentAdded" for e in agent["events"])
            async with http.get(cluster.url("/ui/static/../../http.py")) as r:
                assert r.status in (403, 404)

        # Without a credential: the data is refused (401), the page sends the browser to sign
        # in, and the page's files, which carry no data, are served to anyone (the sign-in form
        # uses its stylesheet).
        async with browser_session(cluster) as anonymous:
            for path in ("/api/v1/agents", "/api/v1/cluster", "/api/v1/stream", "/plain"):
                status, body = await get(anonymous, cluster.url(path))
                assert status == 401 and "corral token" in body["error"], (path, status, body)
            async with anonymous.get(cluster.url("/"), allow_redirects=False) as r:
                assert (r.status, r.headers["Location"]) == (303, "/login")
            async with anonymous.get(cluster.url("/ui/static/js/app.js")) as r:
                assert r.status == 200 and "javascript" in r.content_type
                assert r.headers["Cache-Control"] == "no-cache"
        # A principal the ACLs do not grant the page (an agent's certificate, by default) is
        # told so on a page of its own, with the way to sign in as someone else.
        agent = agent_credential(tmp_path / "node-9")
        async with (
            aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=agent.ssl_context())) as http,
            http.get(cluster.url("/")) as r,
        ):
            page = await r.text()
            assert (r.status, r.content_type) == (403, "text/html"), page
            assert "principal node-9 may not call GetState" in page, page
            assert 'href="/login"' in page


def agent_credential(directory: Path) -> sdk_tls.TLS:
    """An agent's certificate from the local CA the cluster's master uses."""
    ca = pki.read_ca(sdk_tls.home() / "ca")
    pem = pki.issue(ca, directory.name, "agent")
    return sdk_tls.TLS.from_dir(pki.write_credential(directory, ca.cert, pem))


class Launcher(sdk.Scheduler):
    """Launches ``count`` long tasks into its first offers, then declines."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.launched = 0

    async def offers(self, driver: sdk.Driver, offers: list[sdk.Offer]) -> None:
        for offer in offers:
            n = min(self.count - self.launched, int(offer.resources.cpus))
            if n <= 0:
                await driver.decline([offer.id], refuse_seconds=60)
                continue
            tasks = [
                sdk.task(f"t-{self.launched + k}", "sleep 600", cpus=1, mem=16,
                         simulate_seconds=600, demand="small")
                for k in range(n)
            ]  # fmt: skip
            self.launched += n
            await driver.launch([offer], tasks)


async def test_tasks_frameworks_pending_and_the_stream(tmp_path: Path) -> None:
    async with LocalCluster(
        agents=1,
        agent_resources="cpus:4;mem:512;disk:10",
        work_dir=tmp_path,
        master_args=("--allocation-interval", "0.2"),
        agent_args=("--simulate",),
    ) as cluster:
        base = cluster.url("/api/v1")
        # As the page does: signed in once at /login with a token of `corral token`, then
        # every request (the stream's too) with the cookie the form set, and no certificate.
        token = await issue_token(cluster)
        async with browser_session(cluster) as http:
            await sign_in(http, cluster, token.value)
            await read_the_ui(http, cluster, base)


async def sign_in(http: aiohttp.ClientSession, cluster: LocalCluster, token: str) -> None:
    """The sign-in form's POST, as a browser sends it: a bad token is refused with the form
    and its reason; a good one sets the cookie and returns to the route asked for, never to
    another address."""
    login = cluster.url("/login")
    async with http.get(login) as r:
        assert r.status == 200 and "corral token" in await r.text()
    for bad in ("", "garbage", token[:-4] + "AAAA"):
        async with http.post(login, data={"token": bad}, allow_redirects=False) as r:
            assert r.status == 401 and "That token is not valid" in await r.text(), bad
    # A multipart body cut short in its first part's headers: not a form.
    headers = {"Content-Type": "multipart/form-data; boundary=x"}
    async with http.post(login, data=b"--x\r\nbroken", headers=headers) as r:
        assert r.status == 400 and "The form could not be read" in await r.text()
    assert not http.cookie_jar.filter_cookies(cluster.url("/"))
    form = {"token": token, "next": "https://elsewhere.example/"}
    async with http.post(login, data=form, allow_redirects=False) as r:
        assert (r.status, r.headers["Location"]) == (303, "/")
    form["next"] = "#/events?reason=Preempted"
    async with http.post(login, data=form, allow_redirects=False) as r:
        assert (r.status, r.headers["Location"]) == (303, "/#/events?reason=Preempted")
        cookie = r.cookies["corral_token"]
        assert cookie["httponly"] and cookie["secure"] and cookie["samesite"] == "Strict"
    async with http.get(cluster.url("/")) as r:
        assert r.status == 200 and "/ui/static/js/app.js" in await r.text()


async def read_the_ui(http: aiohttp.ClientSession, cluster: LocalCluster, base: str) -> None:
    async with http.get(f"{base}/stream?reason=FrameworkAdded,DemandsSet") as stream:
        assert stream.status == 200
        assert stream.content_type == "text/event-stream"
        hello = await read_message(stream)
        assert hello[0] == "hello" and "Preempted" in hello[1]["reasons"]

        launcher = Launcher(3)
        info = sdk.FrameworkInfo(name="launcher", role="web")
        async with sdk.Driver(launcher, info, cluster.master) as driver:
            fid = driver.framework_id
            # "big" fits no agent: stays pending. "small" is what the launcher's tasks serve (a
            # framework whose every demand fits nowhere is offered nothing: issue #41).
            await driver.set_demands(
                [sdk.Demand("big", 2, cpus=64, mem=1), sdk.Demand("small", 3, cpus=1, mem=16)]
            )
            seen: list[dict[str, Any]] = []
            while not any(e["reason"] == "DemandsSet" for e in seen):
                kind, data = await asyncio.wait_for(read_message(stream), WAIT)
                if kind == "events":
                    seen.extend(data["events"])
            # Only the reasons asked for, in order, each about the framework.
            assert [e["reason"] for e in seen] == ["FrameworkAdded", "DemandsSet"]
            assert {e["subject"] for e in seen} == {fid}

            async def three_tasks() -> dict[str, Any]:
                while True:
                    _, page = await get(http, f"{base}/tasks?framework_id={fid}")
                    if page["total"] == 3:
                        return page  # type: ignore[no-any-return]
                    await asyncio.sleep(0.1)

            page = await asyncio.wait_for(three_tasks(), WAIT)
            assert {t["name"] for t in page["items"]} == {"t-0", "t-1", "t-2"}
            _, one = await get(http, f"{base}/tasks?framework_id={fid}&limit=1&q=t-1")
            assert [t["name"] for t in one["items"]] == ["t-1"] and one["total"] == 1
            task_id = one["items"][0]["id"]
            _, detail = await get(http, f"{base}/tasks/{task_id}")
            (task,) = detail["tasks"]
            assert task["framework_id"] == fid and task["framework_name"] == "launcher"
            status, _ = await get(http, f"{base}/tasks/{task_id}?framework_id=other")
            assert status == 404

            _, fws = await get(http, f"{base}/frameworks")
            (row,) = fws["items"]
            assert row["role"] == "web" and row["tasks"] == 3
            assert row["dominant_share"] == pytest.approx(0.75)  # 3 of 4 cpus
            assert [r["role"] for r in fws["roles"]] == ["web"]

            _, pending = await get(http, f"{base}/pending")
            (demand,) = pending["items"]
            assert demand["name"] == "big" and demand["unmet"] == 2
            assert "insufficient cpus" in demand["summary"], demand
            assert demand["framework_id"] == fid

            async def sampled() -> dict[str, Any]:
                # One sample every few seconds: wait for one taken after the launches.
                while True:
                    _, got = await get(http, f"{base}/cluster/samples")
                    if got["samples"] and got["samples"][-1]["tasks_active"] == 3:
                        return got["samples"][-1]  # type: ignore[no-any-return]
                    await asyncio.sleep(0.2)

            point = await asyncio.wait_for(sampled(), WAIT)
            assert point["total"]["cpus"] == 4 and point["used"]["cpus"] == 3
            assert point["pending_tasks"] == 2


async def read_message(stream: aiohttp.ClientResponse) -> tuple[str, Any]:
    """The next Server-Sent Event (comments skipped): its kind and its JSON data."""
    kind, data = "message", ""
    while True:
        line = (await stream.content.readline()).decode()
        if not line:
            raise AssertionError("the stream ended")
        line = line.rstrip("\n")
        if line == "":
            if data:
                return kind, json.loads(data)
            continue
        if line.startswith("event:"):
            kind = line[6:].strip()
        elif line.startswith("data:"):
            data += line[5:].strip()
