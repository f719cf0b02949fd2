"""Which way behind the memory seam (memory_control.py) this host allows: ``--cgroups``.

``--cgroups auto`` (the default) takes v2 where the agent can create a child of its own cgroup
with the memory controller, else v1 where it can create one under the memory controller's
mount, else psutil; ``--cgroups v2|v1`` insists (exit 2 naming why it cannot), ``none`` is
psutil. Groups are nested under the agent's own cgroup, so its supervisor's accounting and
limits still cover the tasks.

It imports every way (cgroup_v2.py, cgroup_v1.py) and each imports only the seam, so the seam
never imports what implements it.
"""

from __future__ import annotations

from pathlib import Path

from corral.agent.cgroup_v1 import CgroupV1
from corral.agent.cgroup_v2 import CgroupV2
from corral.agent.memory_control import ControlUnavailable, MemoryControl, NoControl, agent_key


def detect(
    mode: str, work_dir: Path, cgroup_root: Path = Path("/sys/fs/cgroup")
) -> tuple[MemoryControl, list[str]]:
    """The control ``mode`` names (one of MODES), and why ``auto`` passed over the ways before
    it (for the agent's log); ControlUnavailable for v1 or v2 that cannot be used, with the
    reason."""
    proc = Path("/proc/self/cgroup").read_text() if Path("/proc/self/cgroup").exists() else ""
    key = agent_key(work_dir)
    if mode == "none":
        return NoControl(), []
    problems: list[str] = []
    if mode in ("auto", "v2"):
        try:
            return CgroupV2.create(cgroup_root, proc, key), problems
        except ControlUnavailable as exc:
            if mode == "v2":
                raise
            problems.append(f"v2: {exc}")
    if mode in ("auto", "v1"):
        try:
            return CgroupV1.create(cgroup_root / "memory", proc, key), problems
        except ControlUnavailable as exc:
            if mode == "v1":
                raise
            problems.append(f"v1: {exc}")
    return NoControl(), problems
