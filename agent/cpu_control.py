"""How the agent limits its process tasks' CPU: a cgroup CPU controller where one is writable.

Rules (as Kubernetes' kubelet and Mesos' cgroups/cpu isolator do):
1. A task with a cpus limit (Guaranteed: limit = request) gets a CFS quota of that many cores
   per period (100 ms): ``cpu.cfs_quota_us`` (v1) or ``cpu.max`` (v2).
2. Every task gets shares from its request, 1024 a core and at least 2 (BestEffort), so
   Burstable tasks split a busy machine by their requests: ``cpu.shares`` (v1) or
   ``cpu.weight`` (v2, kubelet's mapping of shares onto 1-10000).
3. v1: a group per task under the agent's own in the ``cpu`` hierarchy (this machine kind's);
   v2: the task's one group, the memory control's (a process is in one v2 cgroup), with the
   cpu controller enabled. Where neither can be written the agent says so once at start and
   tasks run without a CPU limit (their use is still measured over their process group).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Protocol

from corral.agent.memory_control import ControlUnavailable, MemoryControl, agent_key, own_cgroup

PERIOD_US = 100_000


def quota_us(cpus_limit: float) -> int | None:
    """Rule 1: the CFS quota per period, None for no limit (at least the kernel's 1 ms)."""
    return max(1000, round(cpus_limit * PERIOD_US)) if cpus_limit > 0 else None


def shares(cpus: float) -> int:
    """Rule 2."""
    return max(2, round(cpus * 1024))


def weight(cpu_shares: int) -> int:
    """v2's cpu.weight for v1 shares (kubelet's conversion: 2 -> 1, 262144 -> 10000)."""
    return 1 + ((cpu_shares - 2) * 9999) // 262142


class CpuControl(Protocol):
    name: str  # "cgroup-v1", "cgroup-v2" or "none"

    def prepare(self, key: str, cpus: float, cpus_limit: float) -> str | None:
        """Make task ``key``'s group with its quota and shares; the cgroup.procs its process
        joins before exec, or None. Raises OSError when the group cannot be made."""
        ...

    def release(self, key: str) -> None: ...

    def close(self) -> bool: ...


class NoCpuControl:
    name = "none"

    def prepare(self, key: str, cpus: float, cpus_limit: float) -> str | None:
        return None

    def release(self, key: str) -> None:
        pass

    def close(self) -> bool:
        return True


class CpuV1:
    """Rule 3, v1: ``parent`` is the agent's folder in the cpu hierarchy."""

    name = "cgroup-v1"

    def __init__(self, parent: Path) -> None:
        self.parent = parent

    @classmethod
    def create(cls, mount: Path, proc_cgroup: str, key: str) -> CpuV1:
        if not (mount / "cpu.cfs_quota_us").exists():
            raise ControlUnavailable(f"no cgroup v1 cpu controller (CFS) mounted at {mount}")
        own = own_cgroup("cpu", proc_cgroup)
        if own is None:
            raise ControlUnavailable("the agent's cpu cgroup is not in /proc/self/cgroup")
        parent = mount / own.lstrip("/") / key
        try:
            parent.mkdir(exist_ok=True)
            (parent / "cpu.shares").read_text()
        except OSError as exc:
            raise ControlUnavailable(f"cannot make a cgroup under {parent.parent}: {exc}") from None
        return cls(parent)

    def prepare(self, key: str, cpus: float, cpus_limit: float) -> str | None:
        group = self.parent / key
        group.mkdir(exist_ok=True)
        (group / "cpu.shares").write_text(str(shares(cpus)))
        (group / "cpu.cfs_period_us").write_text(str(PERIOD_US))
        quota = quota_us(cpus_limit)
        (group / "cpu.cfs_quota_us").write_text(str(quota if quota is not None else -1))
        return str(group / "cgroup.procs")

    def release(self, key: str) -> None:
        with contextlib.suppress(OSError):
            (self.parent / key).rmdir()

    def close(self) -> bool:
        with contextlib.suppress(OSError):
            for group in self.parent.iterdir():
                if group.is_dir() and group.name.startswith("task-"):
                    with contextlib.suppress(OSError):
                        group.rmdir()
        try:
            self.parent.rmdir()
        except FileNotFoundError:
            return True
        except OSError:
            return False
        return True


class CpuV2:
    """Rule 3, v2: the memory control's folders (``parent``), with +cpu enabled."""

    name = "cgroup-v2"

    def __init__(self, parent: Path) -> None:
        self.parent = parent

    @classmethod
    def create(cls, parent: Path) -> CpuV2:
        base = parent.parent
        try:
            available = (base / "cgroup.controllers").read_text().split()
        except OSError as exc:
            raise ControlUnavailable(f"cannot read {base / 'cgroup.controllers'}: {exc}") from None
        if "cpu" not in available:
            raise ControlUnavailable(f"the cpu controller is not available in {base}")
        for folder in (base, parent):
            try:
                (folder / "cgroup.subtree_control").write_text("+cpu")
            except OSError as exc:
                raise ControlUnavailable(
                    f"cannot enable the cpu controller in {folder}: {exc.strerror or exc}"
                ) from None
        return cls(parent)

    def prepare(self, key: str, cpus: float, cpus_limit: float) -> str | None:
        group = self.parent / key
        group.mkdir(exist_ok=True)  # made by the memory control first, as a rule
        quota = quota_us(cpus_limit)
        (group / "cpu.max").write_text(f"{quota if quota is not None else 'max'} {PERIOD_US}")
        (group / "cpu.weight").write_text(str(weight(shares(cpus))))
        return str(group / "cgroup.procs")

    def release(self, key: str) -> None:
        pass  # the memory control removes the one folder

    def close(self) -> bool:
        return True


def detect_cpu(
    memory: MemoryControl, work_dir: Path, cgroup_root: Path = Path("/sys/fs/cgroup")
) -> tuple[CpuControl, str]:
    """The CPU control that fits the memory control (v2 shares its folders), else v1's cpu
    hierarchy, else none; and why none, for the agent's one line at start."""
    from corral.agent.cgroup_v2 import CgroupV2

    if isinstance(memory, CgroupV2):
        try:
            return CpuV2.create(memory.parent), ""
        except ControlUnavailable as exc:
            return NoCpuControl(), f"tasks' cpus are not limited: v2: {exc}"
    proc_path = Path("/proc/self/cgroup")
    proc = proc_path.read_text() if proc_path.exists() else ""
    try:
        return CpuV1.create(cgroup_root / "cpu", proc, agent_key(work_dir)), ""
    except ControlUnavailable as exc:
        return NoCpuControl(), f"tasks' cpus are not limited: v1: {exc}"
