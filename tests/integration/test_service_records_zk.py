"""The services scaffold's records in a real ZooKeeper: the same contract as SQLite's
(tests/unit/test_service_records.py), and the fence: a leader whose election znode is gone, or
that a newer leader fenced out, writes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from corral.frameworks.service.records import Fenced, Put, Records
from corral.frameworks.service.zk_records import ZooKeeperRecords
from corral.loadtest.zookeeper import LocalZooKeeper
from tests.unit.test_service_records import check_the_contract
from tests.zk import zookeeper

__all__ = ["zookeeper"]  # the fixture, used by name


@pytest.fixture
def client(zookeeper: LocalZooKeeper) -> Iterator[Any]:
    from kazoo.client import KazooClient

    c = KazooClient(hosts=zookeeper.hosts, timeout=5.0)
    c.start(timeout=15)
    yield c
    c.stop()
    c.close()


def _leader(client: Any) -> ZooKeeperRecords:
    znode = client.create("/svc/json.info_", b"{}", ephemeral=True, sequence=True, makepath=True)
    backend = ZooKeeperRecords(client, "/svc-store", znode)
    backend.open()
    return backend


def test_zookeeper_records_keep_the_contract(client: Any) -> None:
    check_the_contract(lambda: _leader(client))
    assert client.get("/svc-store/epoch")[0] == b"2"  # each open fenced once


def test_a_superseded_leader_writes_nothing(client: Any) -> None:
    first = Records(_leader(client))
    first.write(Put("apps", "web", {"n": 1}))
    second = Records(_leader(client))
    with pytest.raises(Fenced, match="another leader writes /svc-store now"):
        first.write(Put("apps", "web", {"n": 2}))
    assert first.get("apps", "web") == {"n": 1}
    second.write(Put("apps", "web", {"n": 3}))
    assert Records(_leader(client)).get("apps", "web") == {"n": 3}


def test_a_leader_whose_election_znode_is_gone_writes_nothing(client: Any) -> None:
    backend = _leader(client)
    records = Records(backend)
    client.delete(backend.fence.leader_znode)  # what its session's expiry does
    with pytest.raises(Fenced, match=r"election znode .* is gone"):
        records.write(Put("apps", "web", {"n": 1}))
    with pytest.raises(Fenced, match="does not lead"):
        backend.open()
