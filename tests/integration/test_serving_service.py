"""The serving service on real processes (docs/frameworks.md, "The serving service"): a master
and agents (LocalCluster), `corral serving serve` as its own process, its HTTP API and the
`corral app` CLI: two apps, a scale, a failing version that stops and is rolled back, a kill -9
of the service that touches no instance, and endpoints that follow a replaced instance."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from corral.frameworks import sdk
from corral.frameworks.sdk.testing import LocalCluster
from tests.integration.service_cluster import services_cluster
from tests.integration.serving_service import ServingProcess, until, until_async
from tests.master_http import local_session

pytestmark = pytest.mark.e2e

HTTP_CHECK = {"protocol": "HTTP", "path": "/", "grace_period": 20, "interval": 0.5, "timeout": 1}


def web(pids: Path, **fields: Any) -> dict[str, Any]:
    """An app of real HTTP servers, each writing its pid to pids/TASK_ID."""
    return {
        "command": f"echo $$ > {pids}/$CORRAL_TASK_ID; "
        f"exec {sys.executable} -m http.server $PORT0 --bind 127.0.0.1",
        "instances": 2,
        "cpus": 0.25,
        "mem": 32,
        "ports": 1,
        "health_check": HTTP_CHECK,
        "readiness_check": {"protocol": "HTTP", "path": "/", "interval": 0.5, "timeout": 1},
        "backoff": {"initial": 0.2, "max": 1},
        **fields,
    }


async def live_tasks(cluster: LocalCluster) -> dict[str, str]:
    """The master's live tasks: task id -> framework id."""
    state = await cluster.state()
    return {
        t.info.task_id: t.info.framework_id
        for t in state.tasks
        if not sdk.is_terminal(t.status.state)
    }


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    async with services_cluster(tmp_path) as c:
        yield c


@pytest.fixture
def pids(tmp_path: Path) -> Path:
    p = tmp_path / "pids"
    p.mkdir()
    return p


async def deployed(
    s: ServingProcess, app_id: str, cluster: LocalCluster, timeout: float = 60
) -> Any:
    async def check() -> Any:
        answer = await s.ok("GET", f"/v1/apps/{app_id}")
        return answer if answer["deployment"]["state"] == "succeeded" else None

    return await until_async(
        check, timeout, f"app {app_id}'s deployment to succeed", lambda: s.logs() + cluster.logs()
    )


async def test_two_apps_a_scale_and_endpoints_following_a_replaced_instance(
    tmp_path: Path, cluster: LocalCluster, pids: Path
) -> None:
    s = await ServingProcess(
        tmp_path / "state", cluster.master, tmp_path / "serving.log"
    ).wait_ready()
    try:
        status, answer = await s.call("PUT", "/v1/apps/web", web(pids))
        assert status == 201, answer
        assert answer["revision"] == 1
        status, answer = await s.call(
            "PUT", "/v1/apps/worker", {"command": "exec sleep 600", "instances": 3, "cpus": 0.1}
        )
        assert status == 201, answer
        await deployed(s, "web", cluster)
        await deployed(s, "worker", cluster)
        listed = {a["id"]: a for a in (await s.ok("GET", "/v1/apps"))["apps"]}
        assert {k: (a["ready"], a["wanted"]) for k, a in listed.items()} == {
            "web": (2, 2),
            "worker": (3, 3),
        }
        # Each app its own framework on the master, with its own live tasks.
        tasks = await live_tasks(cluster)
        assert sorted(tasks.values()).count(listed["web"]["framework_id"]) == 2
        assert sorted(tasks.values()).count(listed["worker"]["framework_id"]) == 3

        # Scale web to 3 through the CLI.
        done = s.corral("scale", "web", "3")
        assert done.returncode == 0, done.stderr
        assert "revision 2 (instances 2 -> 3)" in done.stdout
        app = await deployed(s, "web", cluster)
        assert app["ready"] == 3 and app["revision"] == 2

        # A watch of web's endpoints, then kill -9 one instance's server.
        updates: list[dict[str, Any]] = []
        async with (
            local_session() as session,
            session.get(
                s.url + "/v1/apps/web/endpoints?watch=true", timeout=aiohttp.ClientTimeout(total=90)
            ) as response,
        ):
            assert response.headers["Content-Type"] == "application/x-ndjson"

            async def read() -> None:
                async for raw in response.content:
                    if raw.strip():
                        updates.append(json.loads(raw))

            reader = asyncio.ensure_future(read())
            try:
                await until(lambda: len(updates) >= 1, 10, "the watch's first line")
                first = {e["task_id"] for e in updates[0]["endpoints"]}
                assert len(first) == 3
                victim = sorted(first)[0]
                os.kill(int((pids / victim).read_text()), signal.SIGKILL)

                def now() -> set[str]:
                    return {e["task_id"] for e in updates[-1]["endpoints"]}

                await until(
                    lambda: any(
                        victim not in {e["task_id"] for e in u["endpoints"]} for u in updates
                    ),
                    30,
                    "the killed instance to leave the endpoints",
                    s.logs(),
                )
                await until(
                    lambda: len(now()) == 3 and victim not in now(),
                    60,
                    "a replacement among 3 endpoints",
                    s.logs() + cluster.logs(),
                )
            finally:
                reader.cancel()
        final = updates[-1]["endpoints"]
        assert len(now() - first) == 1
        for e in final:  # every endpoint listed answers
            url = f"http://{e['host']}:{e['ports'][0]}/"
            with urllib.request.urlopen(url, timeout=5) as r:
                assert r.status == 200
        # The plain form and the CLI agree with the watch.
        plain = await s.ok("GET", "/v1/apps/web/endpoints")
        assert {e["task_id"] for e in plain["endpoints"]} == now()
        nginx = s.corral("endpoints", "web", "-o", "nginx")
        assert nginx.returncode == 0, nginx.stderr
        for e in final:
            assert f"server {e['host']}:{e['ports'][0]};" in nginx.stdout
    finally:
        s.stop()


async def test_a_failing_version_stops_and_is_rolled_back(
    tmp_path: Path, cluster: LocalCluster, pids: Path
) -> None:
    s = await ServingProcess(
        tmp_path / "state", cluster.master, tmp_path / "serving.log"
    ).wait_ready()
    try:
        upgrade = {"minimum_health_capacity": 0.5, "maximum_over_capacity": 0.5}
        good = {"id": "web", **web(pids, instances=2, upgrade=upgrade)}
        good["health_check"] = {**HTTP_CHECK, "grace_period": 2, "max_consecutive_failures": 2}
        (tmp_path / "web.json").write_text(json.dumps(good))
        applied = s.corral("apply", "-f", str(tmp_path / "web.json"))
        assert applied.returncode == 0, applied.stderr
        v1 = await deployed(s, "web", cluster)
        v1_tasks = {i["task_id"] for i in v1["instances"]}

        # Version 2 listens nowhere: its HTTP health check fails, it is killed, again and again.
        bad = {**good, "command": "exec sleep 600", "upgrade": {**upgrade, "failure_threshold": 2}}
        (tmp_path / "web-v2.yaml").write_text(
            "# YAML, as a user may write it\n"
            + "\n".join(f"{k}: {json.dumps(v)}" for k, v in bad.items())
        )
        applied = s.corral("apply", "-f", str(tmp_path / "web-v2.yaml"))
        assert applied.returncode == 0, applied.stderr
        assert "revision 2 (rolling restart to version" in applied.stdout
        watched = s.corral("status", "web", "--watch", timeout=90)
        assert watched.returncode == 1, watched.stdout + watched.stderr + s.logs()
        assert "revision 2 failed: 2 instances of version" in watched.stdout
        assert "health check" in watched.stdout  # the last failure's reason

        # It stopped: nothing of version 2 is launched any more, and one old instance of the
        # two (minimum_health_capacity 0.5) still serves. An instance of version 2 still in its
        # grace period as the deployment failed goes the way of the others, killed by its
        # health check, and is not replaced.
        app = await s.ok("GET", "/v1/apps/web")
        v2 = app["version"]
        launched = {t for t in await live_tasks(cluster)}

        async def no_v2_left() -> bool:
            now = await s.ok("GET", "/v1/apps/web")
            return not [i for i in now["instances"] if i["version"] == v2]

        await until_async(no_v2_left, 60, "version 2's last instances killed unhealthy", s.logs)
        await cluster.wait_for_cycles(10, 30)
        later = await s.ok("GET", "/v1/apps/web")
        assert [i for i in later["instances"] if i["version"] == v2] == []
        assert {i["task_id"] for i in later["instances"]} <= v1_tasks
        assert len(later["instances"]) >= 1
        assert set(await live_tasks(cluster)) <= launched
        status = await s.ok("GET", "/v1/apps/web/status")
        assert status["state"] == "failed" and status["held"] is True

        # Roll back: revision 3 is revision 1's app; the old instances stay, one is added.
        rolled = s.corral("rollback", "web")
        assert rolled.returncode == 0, rolled.stderr
        assert "revision 3" in rolled.stdout
        watched = s.corral("status", "web", "--watch", timeout=90)
        assert watched.returncode == 0, watched.stdout + watched.stderr + s.logs()
        back = await deployed(s, "web", cluster)
        assert back["version"] == v1["version"]
        assert len(back["instances"]) == 2
        assert {i["task_id"] for i in later["instances"]} <= {
            i["task_id"] for i in back["instances"]
        }
        history = (await s.ok("GET", "/v1/apps/web/versions"))["revisions"]
        assert [(r["revision"], r["change"]) for r in history] == [
            (1, "create"),
            (2, "apply"),
            (3, "rollback to 1"),
        ]
        assert history[2]["version"] == history[0]["version"] != history[1]["version"]
    finally:
        s.stop()


async def test_kill_9_of_the_service_touches_no_instance(
    tmp_path: Path, cluster: LocalCluster, pids: Path
) -> None:
    state = tmp_path / "state"
    s = await ServingProcess(state, cluster.master, tmp_path / "serving-1.log").wait_ready()
    try:
        await s.ok("PUT", "/v1/apps/web", web(pids, instances=3))
        await s.ok("PUT", "/v1/apps/worker", {"command": "exec sleep 600", "instances": 2})
        await s.ok("PUT", "/v1/apps/worker/scale", {"instances": 3})
        before = {a: await deployed(s, a, cluster) for a in ("web", "worker")}
        tasks_before = await live_tasks(cluster)
        assert len(tasks_before) == 6
        pids_before = {p.name: p.read_text() for p in pids.iterdir()}

        # A second service on the same store refuses to act, naming the first.
        second = ServingProcess(state, cluster.master, tmp_path / "serving-x.log")
        assert second.proc.wait(30) == 1
        second.stop()
        assert f"another serving service (pid {s.proc.pid}) holds" in second.logs()

        s.kill9()
        s.stop()
        s = await ServingProcess(state, cluster.master, tmp_path / "serving-2.log").wait_ready()

        async def connected() -> Any:
            apps = {a["id"]: a for a in (await s.ok("GET", "/v1/apps"))["apps"]}
            return all(a["connected"] for a in apps.values()) and len(apps) == 2

        await until_async(connected, 30, "both apps subscribed again", s.logs)
        after = {a: await deployed(s, a, cluster) for a in ("web", "worker")}
        for a in ("web", "worker"):
            assert after[a]["framework_id"] == before[a]["framework_id"]
            assert after[a]["revision"] == before[a]["revision"]
            assert after[a]["connected"]
            assert {i["task_id"] for i in after[a]["instances"]} == {
                i["task_id"] for i in before[a]["instances"]
            }
        # Nothing was launched or killed: over ten allocation cycles the master's live tasks
        # stay exactly those, and each web server is the same process.
        await cluster.wait_for_cycles(10, 30)
        assert await live_tasks(cluster) == tasks_before
        assert {p.name: p.read_text() for p in pids.iterdir()} == pids_before
        history = (await s.ok("GET", "/v1/apps/worker/versions"))["revisions"]
        assert [(r["revision"], r["instances"], r["change"]) for r in history] == [
            (1, 2, "create"),
            (2, 3, "scale 2 -> 3"),
        ]
        # The endpoints are back as well, and the apps still act: scale web down.
        endpoints = (await s.ok("GET", "/v1/apps/web/endpoints"))["endpoints"]
        assert {e["task_id"] for e in endpoints} == {
            i["task_id"] for i in before["web"]["instances"]
        }
        await s.ok("PUT", "/v1/apps/web/scale", {"instances": 2})
        await until_async(
            lambda: _count(cluster, before["web"]["framework_id"]),
            30,
            "web scaled to 2 on the master",
            s.logs,
        )
    finally:
        s.stop()


async def _count(cluster: LocalCluster, framework_id: str) -> bool:
    return sum(f == framework_id for f in (await live_tasks(cluster)).values()) == 2


async def test_bad_input_is_refused_with_the_reason_and_changes_nothing(
    tmp_path: Path, cluster: LocalCluster
) -> None:
    s = await ServingProcess(
        tmp_path / "state", cluster.master, tmp_path / "serving.log"
    ).wait_ready()
    try:
        for body, words in (
            ({"command": "x", "cpus": -1}, "cpus: must be a finite number >= 0"),
            ({"command": "x", "bogus": 1}, "unknown field 'bogus'"),
            ({"id": "other", "command": "x"}, "is not the path's 'web'"),
            ([1, 2], "must be a JSON object"),
        ):
            status, answer = await s.call("PUT", "/v1/apps/web", body)
            assert status == 400 and words in answer["error"], (body, answer)
        async with (
            local_session() as session,
            session.put(s.url + "/v1/apps/web", data=b"{nope") as response,
        ):
            assert response.status == 400
            assert "not JSON" in (await response.json())["error"]
        assert (await s.call("GET", "/v1/apps/nope"))[0] == 404
        assert (await s.call("PUT", "/v1/apps/nope/scale", {"instances": 1}))[0] == 404
        await s.ok("PUT", "/v1/apps/web", {"command": "exec sleep 600", "cpus": 0.1})
        for body in ({"instances": -1}, {"instances": "3"}, {"replicas": 3}, {}):
            status, answer = await s.call("PUT", "/v1/apps/web/scale", body)
            assert status == 400, (body, answer)
        status, answer = await s.call("POST", "/v1/apps/web/rollback", {})
        assert status == 400 and "no revision before 1" in answer["error"]
        assert [a["revision"] for a in (await s.ok("GET", "/v1/apps"))["apps"]] == [1]
        # The CLI: a file that does not parse is a usage error (exit 2), one line.
        (tmp_path / "bad.json").write_text('{"id": "web", "command": ')
        done = s.corral("apply", "-f", str(tmp_path / "bad.json"))
        assert done.returncode == 2 and "not JSON" in done.stderr
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
        done = s.corral("get", "nope")
        assert done.returncode == 1 and done.stderr.strip() == "corral app: no app 'nope'"
        deleted = s.corral("delete", "web")
        assert deleted.returncode == 0, deleted.stderr
        await until_async(
            lambda: _none_live(cluster), 30, "web's instance killed on delete", s.logs
        )
        assert (await s.ok("GET", "/v1/apps"))["apps"] == []
    finally:
        s.stop()


async def _none_live(cluster: LocalCluster) -> bool:
    return not await live_tasks(cluster)


async def test_a_deployment_without_room_fails_with_the_masters_why_pending(
    tmp_path: Path, cluster: LocalCluster
) -> None:
    s = await ServingProcess(
        tmp_path / "state", cluster.master, tmp_path / "serving.log"
    ).wait_ready()
    try:
        # Each agent has 4 cpus: an instance of 6 fits nowhere.
        app = {
            "command": "exec sleep 600",
            "cpus": 6,
            "instances": 1,
            "upgrade": {"progress_deadline": 4},
        }
        await s.ok("PUT", "/v1/apps/big", app)
        status = await s.ok("GET", "/v1/apps/big/status")
        assert status["state"] == "running"

        async def failed() -> Any:
            answer = await s.ok("GET", "/v1/apps/big/status")
            return answer if answer["state"] == "failed" else None

        status = await until_async(failed, 30, "the deployment to fail", s.logs)
        assert "no progress for 4 s: 1 instances cannot be placed" in status["reason"]
        assert "insufficient cpus" in status["reason"], status
        # Held: nothing is pending any more (so no why_pending); the reason keeps why.
        assert status["held"] is True and status["pending"] == 0
        shown = s.corral("status", "big")
        assert shown.returncode == 0 and "insufficient cpus" in shown.stdout, shown
        # A fixed app is a new deployment, and it succeeds.
        await s.ok("PUT", "/v1/apps/big", {**app, "cpus": 1})
        await deployed(s, "big", cluster)
    finally:
        s.stop()
