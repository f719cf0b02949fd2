"""The serving service's DNS (`corral serving serve --dns`) on real processes, asked with `dig`:
SRV records for every ready instance's host and port, gone within a second of the instance
failing its health check, and within a second of a scale-down (the drained instance leaves
DNS before it is killed); back when a replacement is ready."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path
from typing import Any

import dns.asyncquery
import dns.message
import pytest

from corral.frameworks.sdk.testing import LocalCluster
from tests.integration.service_cluster import services_cluster
from tests.integration.serving_service import ServingProcess, until_async
from tests.integration.test_dns_server import need_dig
from tests.integration.test_serving_service import deployed

pytestmark = pytest.mark.e2e


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    async with services_cluster(tmp_path) as c:
        yield c


def web_app(dirs: Path) -> dict[str, Any]:
    """HTTP servers whose health check reads the file `healthy` in their sandbox (each writes
    its sandbox to dirs/TASK_ID, so a test can take the file away)."""
    return {
        "command": f"echo ok > healthy; pwd > {dirs}/$CORRAL_TASK_ID; "
        f"exec {sys.executable} -m http.server $PORT0 --bind 127.0.0.1",
        "instances": 3,
        "cpus": 0.2,
        "mem": 32,
        "ports": 1,
        "port_names": ["http"],
        "drain_seconds": 1,
        "health_check": {
            "protocol": "HTTP",
            "path": "/healthy",
            "grace_period": 20,
            "interval": 0.5,
            "timeout": 1,
            "max_consecutive_failures": 3,
        },
        "backoff": {"initial": 0.2, "max": 1},
    }


async def srv(dns_address: str, name: str) -> set[tuple[str, int]]:
    """(target, port) of each SRV record, asked with dnspython (cheap enough to poll)."""
    host, port = dns_address.rsplit(":", 1)
    query = dns.message.make_query(name, "SRV")
    answer = await dns.asyncquery.udp(query, host, port=int(port), timeout=2)
    return {(r.target.to_text(), r.port) for rrset in answer.answer for r in rrset}


async def dig_srv(dns_address: str, name: str) -> set[tuple[str, int]]:
    host, port = dns_address.rsplit(":", 1)
    done = await asyncio.create_subprocess_exec(
        need_dig(), f"@{host}", "-p", port, name, "SRV", "+short", stdout=asyncio.subprocess.PIPE
    )
    out, _ = await done.communicate()
    assert done.returncode == 0
    found = set()
    for line in out.decode().splitlines():
        _priority, _weight, p, target = line.split()
        found.add((target, int(p)))
    return found


def logged_at(log: Path, needle: str) -> float:
    """The wall-clock time of the service's first JSON log line containing ``needle``."""
    for line in log.read_text().splitlines():
        if needle in line and line.startswith("{"):
            stamp = json.loads(line)["timestamp"]
            return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    raise AssertionError(f"no log line with {needle!r}")


async def changed(dns_address: str, before: set[tuple[str, int]], what: str, logs: Any) -> float:
    """Poll until the SRV answer differs from ``before``; the wall-clock time it did."""

    async def check() -> float | None:
        now = await srv(dns_address, "web.corral")
        return time.time() if now != before else None

    return float(await until_async(check, 30, what, logs))


async def test_dig_answers_ready_instances_and_follows_a_failed_check_and_a_scale(
    tmp_path: Path, cluster: LocalCluster
) -> None:
    need_dig()
    dirs = tmp_path / "sandboxes"
    dirs.mkdir()
    log = tmp_path / "serving.log"
    s = await ServingProcess(
        tmp_path / "state", cluster.master, log, "--dns", "127.0.0.1:0", "--dns-ttl", "1"
    ).wait_ready()
    try:
        dns_address = json.loads(s.ready.read_text())["dns"]
        await s.ok("PUT", "/v1/apps/web", web_app(dirs))
        await deployed(s, "web", cluster)
        endpoints = (await s.ok("GET", "/v1/apps/web/endpoints"))["endpoints"]
        assert len(endpoints) == 3
        by_task = {e["task_id"]: e for e in endpoints}
        expected = {(f"{t}.web.corral.", e["ports"][0]) for t, e in by_task.items()}
        assert await dig_srv(dns_address, "web.corral") == expected
        assert await dig_srv(dns_address, "_http._tcp.web.corral") == expected

        # An instance fails its health check: it leaves DNS within a second of the failure.
        victim = sorted(by_task)[0]
        before = await srv(dns_address, "web.corral")
        (Path((dirs / victim).read_text().strip()) / "healthy").unlink()
        gone_at = await changed(dns_address, before, "the failing instance to leave DNS", s.logs)
        failed_at = logged_at(log, f"health check of {victim} failed")
        now = await dig_srv(dns_address, "web.corral")
        assert (f"{victim}.web.corral.", by_task[victim]["ports"][0]) not in now
        assert len(now) == 2
        health_latency = gone_at - failed_at
        assert health_latency < 1.0, f"{health_latency:.2f} s after the failed check"

        # Killed after 3 failures and replaced: the replacement is in DNS once it is ready.
        async def three() -> bool:
            return len(await srv(dns_address, "web.corral")) == 3

        await until_async(three, 60, "a replacement in DNS", s.logs)

        # A scale-down: the drained instance leaves DNS within a second, before its kill.
        before = await srv(dns_address, "web.corral")
        await s.ok("PUT", "/v1/apps/web/scale", {"instances": 2})
        scaled_at = time.time()
        gone_at = await changed(dns_address, before, "the scale-down in DNS", s.logs)
        scale_latency = gone_at - scaled_at
        assert scale_latency < 1.0, f"{scale_latency:.2f} s after the scale"
        assert len(await dig_srv(dns_address, "web.corral")) == 2
        print(
            f"DNS dropped the failing instance {health_latency * 1000:.0f} ms after its failed "
            f"check, the scaled-down one {scale_latency * 1000:.0f} ms after the scale"
        )
    finally:
        s.stop()
