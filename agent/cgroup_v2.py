"""cgroup v2 (``memory_control.py`` has the seam): other hosts' kind.

Per task: ``memory.max`` (the limit; "max" none), ``memory.current`` less ``inactive_file`` of
``memory.stat`` (usage), ``memory.events``'s ``oom_kill`` (the kernel ended it at the limit).

v2 allows processes only in leaves of a cgroup with controllers enabled for its children: the
agent makes its folder under its own cgroup and enables the memory controller there
(``cgroup.subtree_control``), which the kernel refuses while the agent's own cgroup holds
processes other than at the root. A supervisor that delegates a cgroup to the agent (systemd's
``Delegate=yes``) should start it in a leaf of that cgroup and pass the cgroup as the agent's
own; where that is not so, ``--cgroups auto`` falls back to v1 or psutil and says why.
"""

from __future__ import annotations

from pathlib import Path

from corral.agent.cgroup_tree import CgroupTree
from corral.agent.memory_control import ControlUnavailable, own_cgroup


class CgroupV2(CgroupTree):
    name = "cgroup-v2"
    limit_file = "memory.max"
    usage_file = "memory.current"
    events_file = "memory.events"
    unlimited = "max"
    inactive_key = "inactive_file"

    @classmethod
    def create(cls, root: Path, proc_cgroup: str, key: str) -> CgroupV2:
        """Under ``root`` (the unified hierarchy's mount, e.g. /sys/fs/cgroup), in the agent's
        own cgroup."""
        controllers = root / "cgroup.controllers"
        if not controllers.exists():
            raise ControlUnavailable(f"no cgroup v2 hierarchy mounted at {root}")
        own = own_cgroup("", proc_cgroup)
        if own is None:
            raise ControlUnavailable("the agent's cgroup v2 path is not in /proc/self/cgroup")
        base = root / own.lstrip("/")
        try:
            available = (base / "cgroup.controllers").read_text().split()
        except OSError as exc:
            raise ControlUnavailable(f"cannot read {base / 'cgroup.controllers'}: {exc}") from None
        if "memory" not in available:
            raise ControlUnavailable(
                f"the memory controller is not available in {base} (it is bound to cgroup v1 "
                "here, or not delegated to the agent)"
            )
        parent = cls._make_parent(base, key)
        for folder in (base, parent):
            try:
                (folder / "cgroup.subtree_control").write_text("+memory")
            except OSError as exc:
                parent.rmdir()
                raise ControlUnavailable(
                    f"cannot enable the memory controller in {folder}: "
                    f"{exc.strerror or exc} (its cgroup holds processes: start the agent in "
                    "a leaf of a delegated cgroup)"
                ) from None
        return cls(parent)
