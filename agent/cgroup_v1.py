"""cgroup v1's memory controller (``memory_control.py`` has the seam): this machine kind's.

Per task: ``memory.limit_in_bytes`` (the limit; -1 none), ``memory.usage_in_bytes`` less
``total_inactive_file`` of ``memory.stat`` (usage), ``memory.oom_control``'s ``oom_kill``
count (the kernel ended it at the limit; kernels since 4.13 keep it). Groups nest under the
agent's own memory cgroup (``/proc/self/cgroup``); ``memory.use_hierarchy`` is on there, so the
parents' accounting holds the tasks.
"""

from __future__ import annotations

from pathlib import Path

from corral.agent.cgroup_tree import CgroupTree
from corral.agent.memory_control import ControlUnavailable, own_cgroup


class CgroupV1(CgroupTree):
    name = "cgroup-v1"
    limit_file = "memory.limit_in_bytes"
    usage_file = "memory.usage_in_bytes"
    events_file = "memory.oom_control"
    unlimited = "-1"
    inactive_key = "total_inactive_file"

    @classmethod
    def create(cls, mount: Path, proc_cgroup: str, key: str) -> CgroupV1:
        """Under ``mount`` (the memory controller's, e.g. /sys/fs/cgroup/memory), in the
        agent's own memory cgroup."""
        if not (mount / "memory.limit_in_bytes").exists():
            raise ControlUnavailable(f"no cgroup v1 memory controller mounted at {mount}")
        own = own_cgroup("memory", proc_cgroup)
        if own is None:
            raise ControlUnavailable("the agent's memory cgroup is not in /proc/self/cgroup")
        base = mount / own.lstrip("/")
        return cls(cls._make_parent(base, key))
