"""CPU isolation for process tasks on this machine's real cgroup v1 ``cpu`` hierarchy (issue
#43; agent/cpu_control.py): a Guaranteed task with ``cpus: 0.5`` running a busy loop uses at
most 0.6 of a core, measured over the processes in its cgroup; its CFS quota is the task's.
Skipped (with the reason) where the agent cannot write a v1 cpu cgroup (other hosts run v2,
covered against a fake tree in tests/unit/test_cpu_control.py)."""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

import psutil
import pytest

from corral.agent.cpu_control import CpuV1
from corral.agent.memory_control import ControlUnavailable, agent_key, task_key
from corral.frameworks import sdk
from corral.frameworks.sdk.testing import LocalCluster
from tests.integration.launching import Launcher

MOUNT = Path("/sys/fs/cgroup/cpu")


def _why_not() -> str:
    proc = Path("/proc/self/cgroup").read_text()
    with tempfile.TemporaryDirectory() as tmp:
        try:
            CpuV1.create(MOUNT, proc, agent_key(Path(tmp))).close()
        except ControlUnavailable as exc:
            return str(exc)
    return ""


_NO_V1 = _why_not()


@pytest.mark.skipif(bool(_NO_V1), reason=_NO_V1)
async def test_a_half_cpu_busy_loop_uses_at_most_0_6_of_a_core(tmp_path: Path) -> None:
    busy = sdk.task(
        "busy",
        [sys.executable, "-c", "while True: pass"],
        cpus=0.5,
        mem=64,
        cpus_limit=0.5,
        mem_limit=64,
        task_id="busy",
    )
    s = Launcher([busy])
    async with (
        LocalCluster(
            agents=1, work_dir=tmp_path, master_args=("--allocation-interval", "0.2")
        ) as c,
        sdk.Driver(s, sdk.FrameworkInfo(name="cpu"), master=c.master) as d,
    ):
        await s.reaches("busy", "RUNNING")
        own = Path("/proc/self/cgroup").read_text()
        own_cpu = next(line.split(":", 2)[2] for line in own.splitlines() if ":cpu:" in line)
        group = (
            MOUNT
            / own_cpu.lstrip("/")
            / agent_key(tmp_path / "agent-0")
            / task_key(d.framework_id, "busy")
        )
        assert (group / "cpu.cfs_quota_us").read_text().strip() == "50000"
        assert (group / "cpu.cfs_period_us").read_text().strip() == "100000"
        pids = [int(p) for p in (group / "cgroup.procs").read_text().split()]
        assert pids, "the task's process is not in its cpu cgroup"
        procs = [psutil.Process(p) for p in pids]

        def cpu_seconds() -> float:
            return sum(sum(p.cpu_times()[:2]) for p in procs)

        loop = asyncio.get_running_loop()
        start, used0 = loop.time(), cpu_seconds()
        await asyncio.sleep(4)
        cores = (cpu_seconds() - used0) / (loop.time() - start)
        print(f"busy loop with cpus 0.5: {cores:.3f} of a core")
        assert cores <= 0.6, cores
        # The kernel's CFS bandwidth control runs for the group (periods counted only with a
        # quota); whether it throttled depends on how busy the shared machine is.
        stat = dict(line.split() for line in (group / "cpu.stat").read_text().splitlines())
        assert int(stat["nr_periods"]) > 0, stat
        print(f"cpu.stat: {stat}")
        await d.kill("busy")
        await s.reaches("busy", "KILLED")
