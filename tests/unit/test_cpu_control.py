"""CPU limits for process tasks (issue #43; agent/cpu_control.py), against fake cgroup trees:
v2's cpu.max and cpu.weight in the memory control's folders, v1's CFS files."""

from __future__ import annotations

from pathlib import Path

import pytest

from corral.agent.cpu_control import CpuV1, CpuV2, quota_us, shares, weight
from corral.agent.memory_control import ControlUnavailable


def test_quota_shares_and_weight() -> None:
    assert quota_us(0.5) == 50_000 and quota_us(2) == 200_000 and quota_us(0) is None
    assert quota_us(0.001) == 1000  # the kernel's least
    assert shares(0.5) == 512 and shares(0) == 2
    assert weight(2) == 1 and weight(262144) == 10000 and weight(1024) == 39


def _v2_tree(root: Path, controllers: str = "cpu memory io") -> Path:
    base = root / "agent.scope"
    parent = base / "corral-agent-x"
    parent.mkdir(parents=True)
    (base / "cgroup.controllers").write_text(controllers + "\n")
    for folder in (base, parent):
        (folder / "cgroup.subtree_control").write_text("")
    return parent


def test_v2_limits_a_guaranteed_task_by_quota_and_weights_a_burstable_one(tmp_path: Path) -> None:
    parent = _v2_tree(tmp_path)
    cpu = CpuV2.create(parent)
    assert (parent / "cgroup.subtree_control").read_text() == "+cpu"
    procs = cpu.prepare("task-g", cpus=0.5, cpus_limit=0.5)
    assert procs == str(parent / "task-g" / "cgroup.procs")
    assert (parent / "task-g" / "cpu.max").read_text() == "50000 100000"
    assert (parent / "task-g" / "cpu.weight").read_text() == str(weight(512))
    cpu.prepare("task-b", cpus=0.25, cpus_limit=0)
    assert (parent / "task-b" / "cpu.max").read_text() == "max 100000"


def test_v2_without_the_cpu_controller_says_why(tmp_path: Path) -> None:
    with pytest.raises(ControlUnavailable, match="cpu controller is not available"):
        CpuV2.create(_v2_tree(tmp_path, "memory io"))


def test_v1_writes_the_cfs_files(tmp_path: Path) -> None:
    mount = tmp_path / "cpu"
    (mount / "agents").mkdir(parents=True)
    (mount / "cpu.cfs_quota_us").write_text("-1")
    # A fake tree: the kernel would make cpu.shares in a new group; here the probe needs one.
    (mount / "agents" / "corral-agent-x").mkdir()
    (mount / "agents" / "corral-agent-x" / "cpu.shares").write_text("1024")
    cpu = CpuV1.create(mount, "1:cpu:/agents\n", "corral-agent-x")
    cpu.prepare("task-g", cpus=1.5, cpus_limit=1.5)
    group = mount / "agents" / "corral-agent-x" / "task-g"
    assert (group / "cpu.cfs_quota_us").read_text() == "150000"
    assert (group / "cpu.cfs_period_us").read_text() == "100000"
    assert (group / "cpu.shares").read_text() == "1536"
    cpu.prepare("task-b", cpus=0.1, cpus_limit=0)
    assert (mount / "agents" / "corral-agent-x" / "task-b" / "cpu.cfs_quota_us").read_text() == "-1"
    with pytest.raises(ControlUnavailable, match="not in /proc/self/cgroup"):
        CpuV1.create(mount, "4:memory:/x\n", "k")
