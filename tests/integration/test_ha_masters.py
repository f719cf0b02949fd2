"""Highly available masters on a real ZooKeeper (real master and agent processes): a standby
answers with the leader's address on gRPC and HTTP, client commands find the leader from a list
or from ZooKeeper, a killed leader is replaced and the agents follow, and bad input to the HA
flags is refused with one line."""

from __future__ import annotations

import asyncio
import sys
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from corral.frameworks.sdk import tls as sdk_tls
from corral.frameworks.sdk.detector import LEADER_METADATA
from corral.loadtest.zookeeper import LocalZooKeeper
from corral.v1 import operator_pb2 as op
from corral.v1 import operator_pb2_grpc as op_grpc
from tests.ha_cluster import HaCluster
from tests.master_http import local_context
from tests.zk import zookeeper

__all__ = ["zookeeper"]  # the fixture, used by name

CORRAL = (sys.executable, "-m", "corral.cli.main")
WAIT = 60.0


@pytest.fixture
async def cluster(zookeeper: LocalZooKeeper, tmp_path: Path) -> AsyncIterator[HaCluster]:
    async with HaCluster(
        zookeeper,
        masters=2,
        agents=1,
        work_dir=tmp_path / "cluster",
        master_args=("--allocation-interval", "0.2", "--agent-reregister-timeout", "30"),
    ) as c:
        yield c


async def _corral(*args: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        *CORRAL, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    out, _ = await asyncio.wait_for(proc.communicate(), WAIT)
    return proc.returncode or 0, out.decode()


def _redirect(url: str) -> tuple[int, str]:
    class NoFollow(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: object, **kwargs: object) -> None:
            return None

    opener = urllib.request.build_opener(
        NoFollow, urllib.request.HTTPSHandler(context=local_context())
    )
    try:
        with opener.open(url, timeout=5) as r:
            return r.status, ""
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("Location", "")


async def test_a_standby_names_the_leader_and_clients_find_it(cluster: HaCluster) -> None:
    leader = await cluster.leader()
    standby = next(n for n in cluster.masters if n != leader)
    leader_grpc, leader_http = cluster.addresses[leader]
    standby_grpc, standby_http = cluster.addresses[standby]
    health = await cluster.health_of(standby)
    assert (health["role"], health["leader"]) == ("standby", leader_grpc)
    lead_health = await cluster.health_of(leader)
    assert lead_health["role"] == "leader"
    assert lead_health["epoch"] >= 1
    # HTTP: a 307 to the same path on the leader's HTTP address.
    status, location = await asyncio.to_thread(
        _redirect, f"https://{standby_http}/api/v1/state?completed=false"
    )
    assert (status, location) == (307, f"//{leader_http}/api/v1/state?completed=false")
    # gRPC: UNAVAILABLE, the leader in the reason and in the trailing metadata.
    async with sdk_tls.aio_channel(standby_grpc, sdk_tls.resolve()) as channel:
        stub = op_grpc.OperatorStub(channel)  # type: ignore[no-untyped-call]
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.GetState(op.GetStateRequest(), timeout=5)
    assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
    assert leader_grpc in (caught.value.details() or "")
    assert (LEADER_METADATA, leader_grpc) in tuple(caught.value.trailing_metadata() or ())
    # The CLI: from a list that starts with the standby, and from ZooKeeper.
    for where in (("--master", f"{standby_grpc},{leader_grpc}"), ("--zk", cluster.url)):
        code, out = await _corral("get", "agents", *where, "-o", "json")
        assert code == 0, out
        assert '"hostname"' in out


async def test_a_killed_leader_is_replaced_and_the_agent_follows(cluster: HaCluster) -> None:
    old = await cluster.leader()
    epoch = (await asyncio.to_thread(cluster.health, old) or {})["epoch"]
    await cluster.kill(old)
    new = await cluster.leader(timeout=WAIT)
    assert new != old
    health = await asyncio.to_thread(cluster.health, new)
    assert health is not None and health["epoch"] > epoch
    await cluster.wait_for_agents(1, WAIT)  # the agent re-registered with the new leader
    state = await cluster.state()
    assert [a.info.hostname for a in state.agents if a.active] != []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("get", "agents", "--zk", "zk://127.0.0.1:2181"), "names no path"),
        (("get", "agents", "--zk", "http://x/y"), "not a ZooKeeper URL"),
        (("get", "agents", "--master", "a:1,,b:2"), "is not HOST:PORT"),
        (("master", "--zk", "zk://127.0.0.1:notaport/c"), "is not HOST:PORT"),
        (("master", "--zk", "zk://127.0.0.1:2181/c", "--work-dir", "/tmp/x"), "drop --work-dir"),
        (("agent", "--master", "127.0.0.1:5050", "--zk", "zk://h:1/p"), "not allowed with"),
    ],
)
async def test_bad_ha_flags_are_one_line_usage_errors(args: tuple[str, ...], message: str) -> None:
    code, out = await _corral(*args)
    assert code == 2, out
    assert message in out
    assert "Traceback" not in out
