"""The registry's stores: a SQLite file holds exactly what the memory store holds, survives being
reopened, keeps its secrets to its owner, and refuses what it cannot read with a clear error."""

from __future__ import annotations

import math
import os
import sqlite3
import stat
from dataclasses import replace
from pathlib import Path

import pytest

from corral.master.core.durable import (
    AgentEntry,
    Change,
    DeletePriorityClass,
    FrameworkEntry,
    PutAgent,
    PutFramework,
    PutPriorityClass,
    PutQuota,
    PutWeight,
    RemoveAgent,
)
from corral.master.core.types import AgentSpec, FrameworkSpec
from corral.master.registry import MemoryRegistry, RegistryError, SqliteRegistry, open_registry
from corral.master.registry.prune import MAX_REMOVED_FRAMEWORKS
from corral.placement import AttributeConstraint, ConstraintOp, Taint, TaintEffect, Toleration
from corral.priority import PreemptionPolicy, PriorityClass
from corral.resources import parse_resources
from corral.roles import Quota

AGENT = AgentEntry(
    spec=AgentSpec(
        agent_id="a1",
        hostname="node-1",
        resources=parse_resources("cpus:8;mem:16384;disk:1000;gpus:2;ports:[31000-31999]"),
        attributes={"zone": "b", "rack": "r7"},
        taints=(Taint("spot", "true", TaintEffect.NO_SCHEDULE),),
        reservations={"web": parse_resources("cpus:2;mem:1024")},
    ),
    secret="s3cret",
    registered_at=100.0,
)
FRAMEWORK = FrameworkEntry(
    spec=FrameworkSpec(
        framework_id="fw-serving",
        name="serving",
        role="web",
        principal="ops",
        partition_aware=True,
        gpu_resources=True,
        failover_timeout=600.0,
        tolerations=(
            Toleration("spot", "true", effect=TaintEffect.NO_SCHEDULE),
            Toleration("dedicated", exists=True),
        ),
        offer_constraints=(
            AttributeConstraint("zone", ConstraintOp.IN, ("a", "b")),
            AttributeConstraint("rack", ConstraintOp.EXISTS),
        ),
        hostname="client-1",
        user="svc",
    ),
    registered_at=101.0,
)
QUOTA = Quota(guarantee=(2.0, 1024.0, 0.0, 0.0), limit=(10.0, math.inf, math.inf, 1.0))
CHANGES: list[Change] = [
    PutAgent(AGENT),
    PutFramework(FRAMEWORK),
    PutWeight("web", 3.0),
    PutQuota("web", QUOTA),
    PutQuota("batch", QUOTA),
    PutAgent(AgentEntry(spec=AGENT.spec, secret="s3cret", registered_at=100.0, unreachable_at=5.0)),
    PutFramework(FrameworkEntry(spec=FRAMEWORK.spec, registered_at=101.0, disconnected_at=7.5)),
    PutQuota("batch", Quota()),  # cleared
    PutPriorityClass(PriorityClass("gold", 500, PreemptionPolicy.NEVER, "paid", True)),
    DeletePriorityClass("batch"),
    PutPriorityClass(PriorityClass("silver", 100)),
    PutPriorityClass(PriorityClass("gold", 600, global_default=True)),  # moves to the end
    PutAgent(
        AgentEntry(
            spec=AgentSpec(agent_id="a2", hostname="gone", resources=parse_resources("cpus:1")),
            secret="x",
            registered_at=1.0,
            unreachable_at=2.0,
        )
    ),
    RemoveAgent("a2"),  # forgotten (pruning.py)
    RemoveAgent("never-there"),  # nothing to forget: not an error
]


def test_sqlite_holds_what_memory_holds_after_a_reopen(tmp_path: Path) -> None:
    memory = MemoryRegistry()
    sqlite = SqliteRegistry(tmp_path / "registry.db")
    for change in CHANGES:
        memory.apply([change])
        sqlite.apply([change])
    sqlite.close()
    reopened = SqliteRegistry(tmp_path / "registry.db")
    state = reopened.load()
    assert state.durable and not memory.load().durable  # an unknown agent id is a new agent
    assert replace(state, durable=False) == memory.load()
    assert [a.agent_id for a in state.agents] == ["a1"]
    assert state.agents[0].unreachable_at == 5.0 and state.agents[0].spec == AGENT.spec
    assert state.frameworks[0].spec == FRAMEWORK.spec  # every field, through the wire form
    assert state.frameworks[0].disconnected_at == 7.5
    assert state.weights == (("web", 3.0),)
    assert state.quotas == (("web", QUOTA),)
    assert state.priority_classes == (
        ("batch", None),
        ("silver", PriorityClass("silver", 100)),
        ("gold", PriorityClass("gold", 600, global_default=True)),
    )
    reopened.close()


def test_the_file_is_its_owners_alone(tmp_path: Path) -> None:
    registry = open_registry(tmp_path / "work")
    registry.apply([PutAgent(AGENT)])
    path = tmp_path / "work" / "registry.db"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "work").st_mode) == 0o700
    assert registry.describe() == f"sqlite:{path}"
    registry.close()


def test_a_failed_batch_leaves_nothing_of_itself(tmp_path: Path) -> None:
    registry = SqliteRegistry(tmp_path / "registry.db")
    registry.apply([PutWeight("web", 1.0)])
    bad = PutAgent(AgentEntry(spec=AGENT.spec, secret=None, registered_at=1.0))  # type: ignore[arg-type]
    with pytest.raises(RegistryError, match="cannot write"):
        registry.apply([PutWeight("web", 9.0), bad])
    assert registry.load().weights == (("web", 1.0),)
    registry.close()


def test_removed_frameworks_are_forgotten_beyond_the_newest_ones() -> None:
    registry = MemoryRegistry()
    changes: list[Change] = [
        PutFramework(
            FrameworkEntry(
                spec=FrameworkSpec(framework_id=f"f{i}", name="x"),
                registered_at=0.0,
                removed_at=float(i),
            )
        )
        for i in range(MAX_REMOVED_FRAMEWORKS + 5)
    ]
    changes.append(PutFramework(FRAMEWORK))  # not removed: never forgotten
    registry.apply(changes)
    kept = {e.framework_id for e in registry.load().frameworks}
    assert len(kept) == MAX_REMOVED_FRAMEWORKS + 1
    assert kept.isdisjoint({"f0", "f1", "f2", "f3", "f4"})
    assert {"f5", "f1004", "fw-serving"} <= kept


def test_sqlite_forgets_the_same_removed_frameworks(tmp_path: Path) -> None:
    memory, sqlite = MemoryRegistry(), SqliteRegistry(tmp_path / "r.db")
    changes: list[Change] = [
        PutFramework(
            FrameworkEntry(
                spec=FrameworkSpec(framework_id=f"f{i}", name="x"),
                registered_at=0.0,
                removed_at=float(i),
            )
        )
        for i in range(MAX_REMOVED_FRAMEWORKS + 3)
    ]
    memory.apply(changes)
    sqlite.apply(changes)
    ids = sorted(e.framework_id for e in sqlite.load().frameworks)
    assert ids == sorted(e.framework_id for e in memory.load().frameworks)
    assert "f0" not in ids and "f3" in ids
    sqlite.close()


def test_a_file_that_is_not_a_registry_is_refused_clearly(tmp_path: Path) -> None:
    path = tmp_path / "registry.db"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(RegistryError, match="cannot open the registry"):
        SqliteRegistry(path)


def test_a_registry_from_a_newer_corral_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "registry.db"
    db = sqlite3.connect(path)
    db.execute("PRAGMA user_version=99")
    db.close()
    with pytest.raises(RegistryError, match="newer than this corral"):
        SqliteRegistry(path)


def test_a_damaged_record_is_refused_when_read(tmp_path: Path) -> None:
    registry = SqliteRegistry(tmp_path / "registry.db")
    registry.apply([PutAgent(AGENT)])
    db = sqlite3.connect(tmp_path / "registry.db")
    db.execute("UPDATE agents SET info = x'ffff'")
    db.commit()
    db.close()
    with pytest.raises(RegistryError, match="cannot read the registry"):
        registry.load()
    registry.close()
