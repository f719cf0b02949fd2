"""The ZooKeeper registry on a real ZooKeeper: it holds exactly what the memory store holds, a
loop turn is one fenced transaction, a record over a znode's size is chunked, and a master
whose leadership ended (its election znode gone, or a newer leader fenced) writes nothing."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from corral.loadtest.zookeeper import LocalZooKeeper
from corral.master.core.durable import (
    AgentEntry,
    FrameworkEntry,
    PutAgent,
    PutFramework,
    PutWeight,
    RemoveAgent,
)
from corral.master.registry import MemoryRegistry, RegistryError, zk_multiread
from corral.master.registry import zookeeper as zk_registry
from corral.master.registry.prune import MAX_REMOVED_FRAMEWORKS
from corral.master.registry.zookeeper import DecodedAgents, ZooKeeperRegistry, encode_name
from tests.unit.test_registry import AGENT, CHANGES, FRAMEWORK
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


def _leader(client: Any, path: str = "/corral") -> ZooKeeperRegistry:
    znode = client.create(f"{path}/json.info_", b"{}", ephemeral=True, sequence=True, makepath=True)
    registry = ZooKeeperRegistry(client, f"{path}-registry", znode)
    registry.fence()
    return registry


def test_zookeeper_holds_what_memory_holds_for_the_next_leader(client: Any) -> None:
    memory = MemoryRegistry()
    first = _leader(client)
    for i in range(0, len(CHANGES), 3):
        memory.apply(CHANGES[i : i + 3])
        first.apply(CHANGES[i : i + 3])
    second = _leader(client)
    state = second.load()
    assert state.agents == memory.load().agents
    assert state.frameworks == memory.load().frameworks
    assert state.weights == memory.load().weights
    assert state.quotas == memory.load().quotas
    assert state.priority_classes == memory.load().priority_classes
    assert second.epoch == first.epoch + 1


def test_a_loop_turn_is_one_transaction_even_with_a_record_changed_twice(client: Any) -> None:
    registry = _leader(client)
    registry.load()
    unreachable = dataclasses.replace(AGENT, unreachable_at=9.0)
    registry.apply([PutAgent(AGENT), PutFramework(FRAMEWORK), PutAgent(unreachable)])
    registry.apply([PutAgent(AGENT), PutWeight("web", 2.0)])  # versioned sets of what exists
    assert registry.transactions == 2
    assert _leader(client).load().agents == (AGENT,)


def test_a_record_larger_than_a_znode_is_chunked_and_read_back(
    client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Records this large pass every input limit only in odd clusters; a small CHUNK drives the
    # same code with ordinary records.
    monkeypatch.setattr(zk_registry, "CHUNK", 120)
    registry = _leader(client)
    big = dataclasses.replace(FRAMEWORK.spec, name="n" * 250)  # its record: 5 chunks
    entry = FrameworkEntry(spec=big, registered_at=1.0)
    registry.apply([PutFramework(entry)])
    chunks = client.get_children(f"/corral-registry/frameworks/{FRAMEWORK.framework_id}")
    assert sorted(chunks) == ["1", "2", "3", "4"]
    assert _leader(client).load().frameworks == (entry,)
    # Shrunk to fewer chunks: the extra ones go in the same turn.
    third = _leader(client)
    third.load()
    third.apply([PutFramework(FRAMEWORK)])
    left = client.get_children(f"/corral-registry/frameworks/{FRAMEWORK.framework_id}")
    assert len(left) < 4
    assert _leader(client).load().frameworks == (FRAMEWORK,)
    assert third.transactions == 1


def test_a_superseded_leader_writes_nothing(client: Any) -> None:
    old = _leader(client)
    old.apply([PutWeight("web", 1.0)])
    new = _leader(client)
    with pytest.raises(RegistryError, match="fenced: another master leads now"):
        old.apply([PutWeight("web", 99.0), PutAgent(AGENT)])
    state = new.load()
    assert state.weights == (("web", 1.0),)
    assert state.agents == ()


def test_a_leader_whose_znode_is_gone_writes_nothing(client: Any) -> None:
    registry = _leader(client)
    client.delete(registry.leader_znode)  # what its session's expiry does
    with pytest.raises(RegistryError, match=r"election znode .* is gone"):
        registry.apply([PutWeight("web", 5.0)])
    with pytest.raises(RegistryError, match="does not lead"):
        registry.fence()
    assert _leader(client).load().weights == ()


def test_an_unfenced_registry_refuses_to_write(client: Any) -> None:
    znode = client.create("/corral/json.info_", b"{}", ephemeral=True, sequence=True, makepath=True)
    registry = ZooKeeperRegistry(client, "/corral-registry", znode)
    with pytest.raises(RegistryError, match="not fenced"):
        registry.apply([PutWeight("web", 5.0)])


def test_removed_frameworks_are_forgotten_beyond_the_newest_ones(client: Any) -> None:
    registry = _leader(client)
    registry.apply(
        [
            PutFramework(
                dataclasses.replace(
                    FRAMEWORK,
                    spec=dataclasses.replace(FRAMEWORK.spec, framework_id=f"fw{i}"),
                    removed_at=float(i),
                )
            )
            for i in range(MAX_REMOVED_FRAMEWORKS + 3)
        ]
    )
    kept = _leader(client).load().frameworks
    assert len(kept) == MAX_REMOVED_FRAMEWORKS
    assert min(f.removed_at or 0 for f in kept) == 3.0


def test_a_damaged_record_is_refused_clearly(client: Any) -> None:
    registry = _leader(client)
    registry.apply([PutWeight("web", 1.0)])
    client.set("/corral-registry/weights/web", b"1\n{not json")
    with pytest.raises(RegistryError, match="cannot read the registry /corral-registry"):
        _leader(client).load()


def _agent(i: int) -> PutAgent:
    spec = dataclasses.replace(AGENT.spec, agent_id=f"agent-{i:05d}", hostname=f"node-{i}")
    return PutAgent(dataclasses.replace(AGENT, spec=spec, registered_at=float(i)))


def _framework(i: int) -> PutFramework:
    spec = dataclasses.replace(FRAMEWORK.spec, framework_id=f"fw-{i:03d}", name=f"fw{i}" * 40)
    return PutFramework(dataclasses.replace(FRAMEWORK, spec=spec, registered_at=float(i)))


def test_a_new_leader_reads_a_large_registry_whole_in_a_few_requests(
    client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 2,000 agents, 60 frameworks (10 of them chunked) and a weight, as a leader wrote them;
    # the next leader must see every record, with a few multiRead requests, not one a znode.
    memory = MemoryRegistry()
    first = _leader(client)
    changes = [_agent(i) for i in range(2000)] + [_framework(i) for i in range(50)]
    changes.append(PutWeight("web", 3.0))
    for i in range(0, len(changes), 500):
        memory.apply(changes[i : i + 500])
        first.apply(changes[i : i + 500])
    with monkeypatch.context() as small_chunks:
        small_chunks.setattr(zk_registry, "CHUNK", 300)
        big = [_framework(i) for i in range(50, 60)]  # each record: several chunks
        memory.apply(big)
        first.apply(big)
    assert client.get_children(f"/corral-registry/frameworks/{encode_name('fw-055')}")
    sent: list[Any] = []
    call = client._call

    def counted(request: Any, result: Any) -> Any:
        sent.append(request)
        return call(request, result)

    monkeypatch.setattr(client, "_call", counted)
    state = _leader(client).load()
    want = memory.load()
    assert len(state.agents) == 2000
    assert len(state.frameworks) == 60
    assert state.agents == want.agents
    assert state.frameworks == want.frameworks
    assert state.weights == (("web", 3.0),)
    reads = [r for r in sent if type(r).__name__ in {"GetData", "MultiRead"}]
    assert len(reads) <= 2000 // zk_registry.READ_BATCH + 1 + 10 // zk_registry.CHUNK_READ_BATCH + 2


def test_a_record_missing_a_chunk_is_refused_naming_it(
    client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(zk_registry, "CHUNK", 120)
    _leader(client).apply([PutFramework(FRAMEWORK)])
    client.delete(f"/corral-registry/frameworks/{FRAMEWORK.framework_id}/1")
    with pytest.raises(RegistryError, match=f"frameworks/{FRAMEWORK.framework_id}/1: NoNodeError"):
        _leader(client).load()


def test_a_server_without_multiread_is_refused_clearly(
    client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = _leader(client)
    registry.apply([PutWeight("web", 1.0)])
    # An opcode the server does not know is answered as a ZooKeeper before 3.6 answers
    # multiRead: "unimplemented" (and the connection is dropped; kazoo reconnects).
    monkeypatch.setattr(zk_multiread.MultiRead, "type", 99)
    with pytest.raises(RegistryError, match=r"no multiRead \(ZooKeeper 3.6 or later"):
        registry.load()


def test_a_standby_decodes_agents_ahead_and_its_read_decodes_only_what_changed(
    client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rule 4: the agents' records a standby decoded ahead are taken as they are when their
    bytes did not change; a record changed or added since is decoded from what the new leader
    read, and removed ones are gone. The state is the same as a read with nothing ahead."""
    first = _leader(client)
    first.apply([_agent(i) for i in range(50)])
    decoded = DecodedAgents()
    standby = client.create("/corral/json.info_", b"{}", ephemeral=True, sequence=True)
    ahead = ZooKeeperRegistry(client, "/corral-registry", standby, decoded)
    assert ahead.warm() == 50
    assert ahead.warm() == 0, "nothing was added: the listing is not read again"
    unreachable = dataclasses.replace(_agent(3).entry, unreachable_at=9.0)
    first.apply([PutAgent(unreachable), _agent(50), RemoveAgent(_agent(7).entry.agent_id)])
    assert ahead.warm() == 1  # the one added (the changed one's bytes are compared later)
    decodes: list[Any] = []
    decode = zk_registry._agent_entry

    def counted(record: dict[str, Any]) -> AgentEntry:
        decodes.append(record)
        return decode(record)

    monkeypatch.setattr(zk_registry, "_agent_entry", counted)
    leader = ZooKeeperRegistry(client, "/corral-registry", standby, decoded)
    leader.fence()
    state = leader.load()
    assert [float(r["registered_at"]) for r in decodes] == [3.0]  # only the changed record
    assert decoded.reused == 49 and not decoded.entries
    monkeypatch.setattr(zk_registry, "_agent_entry", decode)
    assert state.agents == _leader(client).load().agents
    ids = {a.agent_id for a in state.agents}
    assert len(ids) == 50 and "agent-00007" not in ids and "agent-00050" in ids
    assert next(a for a in state.agents if a.agent_id == "agent-00003").unreachable_at == 9.0
