"""The agent's memory-control seam: cgroup v1 and v2 read and written through their files (here
a folder laid out as the kernel lays them out; tests/integration/test_qos.py runs the real
controller), how ``--cgroups`` chooses, and the psutil fallback's process-group measurement."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from corral.agent.cgroup_v1 import CgroupV1
from corral.agent.cgroup_v2 import CgroupV2
from corral.agent.memory_control import (
    MIB,
    ControlUnavailable,
    NoControl,
    own_cgroup,
    task_key,
)
from corral.agent.memory_detect import detect
from corral.agent.process_groups import CpuRates, sample_groups

PROC_V1 = "9:name=systemd:/\n4:memory:/svc/agent\n1:cpu:/\n0::/\n"
PROC_V2 = "0::/svc/agent\n"


def test_own_cgroup_reads_v1_and_v2_lines() -> None:
    assert own_cgroup("memory", PROC_V1) == "/svc/agent"
    assert own_cgroup("", PROC_V2) == "/svc/agent"
    assert own_cgroup("memory", PROC_V2) is None
    assert own_cgroup("", "garbage") is None


def fake_v1(tmp: Path) -> Path:
    mount = tmp / "memory"
    (mount / "svc" / "agent").mkdir(parents=True)
    (mount / "memory.limit_in_bytes").write_text("9223372036854771712\n")
    return mount


def test_v1_makes_a_limited_group_reads_usage_and_oom_kills(tmp_path: Path) -> None:
    mount = fake_v1(tmp_path)
    control = CgroupV1.create(mount, PROC_V1, "corral-agent-x")
    assert control.parent == mount / "svc" / "agent" / "corral-agent-x"
    key = task_key("f1", "t1")
    join = control.prepare(key, 100.0)
    group = control.parent / key
    assert join == str(group / "cgroup.procs")
    assert (group / "memory.limit_in_bytes").read_text() == str(100 * MIB)
    # The kernel's files as it writes them: usage less the inactive file pages is the usage.
    (group / "memory.usage_in_bytes").write_text(f"{80 * MIB}\n")
    (group / "memory.stat").write_text(f"cache 0\ntotal_inactive_file {30 * MIB}\n")
    assert control.usage_mib(key) == 50.0
    (group / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 0\n")
    assert not control.oom_killed(key)
    (group / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 1\n")
    assert control.oom_killed(key)
    assert control.prepare(task_key("f1", "t2"), 0) is not None
    assert (control.parent / task_key("f1", "t2") / "memory.limit_in_bytes").read_text() == "-1"
    assert control.usage_mib("task-unknown") is None


def test_a_busy_group_is_removed_at_close(tmp_path: Path) -> None:
    control = CgroupV1.create(fake_v1(tmp_path), PROC_V1, "corral-agent-x")
    key = task_key("f1", "t1")
    control.prepare(key, 10)
    control.release(key)  # the fake folder holds files: rmdir fails as a busy cgroup would
    assert (control.parent / key).exists()
    assert not control.close()  # still busy: the caller tries again
    for f in (control.parent / key).iterdir():
        f.unlink()
    assert control.close()
    assert not control.parent.exists()


def test_v1_is_unavailable_without_its_mount_or_its_line(tmp_path: Path) -> None:
    with pytest.raises(ControlUnavailable, match="no cgroup v1 memory controller"):
        CgroupV1.create(tmp_path / "nothing", PROC_V1, "k")
    with pytest.raises(ControlUnavailable, match="not in /proc/self/cgroup"):
        CgroupV1.create(fake_v1(tmp_path), PROC_V2, "k")


def fake_v2(tmp: Path, controllers: str = "cpu memory pids") -> Path:
    root = tmp / "unified"
    own = root / "svc" / "agent"
    own.mkdir(parents=True)
    (root / "cgroup.controllers").write_text(controllers + "\n")
    (own / "cgroup.controllers").write_text(controllers + "\n")
    (own / "cgroup.subtree_control").write_text("")
    return root


def test_v2_enables_memory_for_its_children_and_uses_v2_files(tmp_path: Path) -> None:
    root = fake_v2(tmp_path)
    control = CgroupV2.create(root, PROC_V2, "corral-agent-x")
    own = root / "svc" / "agent"
    assert (own / "cgroup.subtree_control").read_text() == "+memory"
    assert (control.parent / "cgroup.subtree_control").read_text() == "+memory"
    key = task_key("f", "t")
    control.prepare(key, 64)
    group = control.parent / key
    assert (group / "memory.max").read_text() == str(64 * MIB)
    control.prepare(task_key("f", "u"), 0)
    assert (control.parent / task_key("f", "u") / "memory.max").read_text() == "max"
    (group / "memory.current").write_text(f"{40 * MIB}\n")
    (group / "memory.stat").write_text(f"anon 1\ninactive_file {8 * MIB}\n")
    assert control.usage_mib(key) == 32.0
    (group / "memory.events").write_text("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n")
    assert control.oom_killed(key)


def test_v2_without_the_memory_controller_says_why(tmp_path: Path) -> None:
    with pytest.raises(ControlUnavailable, match="memory controller is not available"):
        CgroupV2.create(fake_v2(tmp_path, "cpu pids"), PROC_V2, "k")
    with pytest.raises(ControlUnavailable, match="no cgroup v2 hierarchy"):
        CgroupV2.create(tmp_path / "none", PROC_V2, "k")


def test_detect_falls_back_to_psutil_and_says_why(tmp_path: Path) -> None:
    control, notes = detect("auto", tmp_path, cgroup_root=tmp_path / "nothing")
    assert isinstance(control, NoControl) and control.name == "psutil"
    assert any("v2:" in n for n in notes) and any("v1:" in n for n in notes)
    with pytest.raises(ControlUnavailable):
        detect("v1", tmp_path, cgroup_root=tmp_path / "nothing")
    assert detect("none", tmp_path)[0].name == "psutil"


def test_process_groups_are_measured_by_group_not_by_parentage() -> None:
    # A child in a group of its own that starts a grandchild: both count, by group.
    script = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', "
    script += "'b = bytearray(30 * 2**20); import time; time.sleep(30)']); time.sleep(30)"
    proc = subprocess.Popen([sys.executable, "-c", script], process_group=0)
    try:
        pgid = proc.pid
        deadline = 50
        got = {}
        while deadline:
            got = sample_groups([pgid])
            if pgid in got and got[pgid].mem_mib > 30:
                break
            deadline -= 1
            time.sleep(0.1)
        assert got[pgid].mem_mib > 30, got
        assert sample_groups([999_999_999]) == {}
    finally:
        os.killpg(proc.pid, 9)
        proc.wait()


def test_cpu_rates_are_seconds_used_over_time_between_measurements() -> None:
    rates = CpuRates()
    assert rates.rate("t", 10.0, 5.0) == 0.0  # first: nothing to compare with
    assert rates.rate("t", 12.0, 6.0) == 0.5
    assert rates.rate("t", 13.0, 5.0) == 0.0  # a process ended: never negative
    rates.keep(set())
    assert rates.rate("t", 14.0, 9.0) == 0.0
