"""How the agent limits and measures its tasks' memory: one seam, three ways behind it.

- ``cgroup-v2`` (``cgroup_v2.py``): a cgroup per task under the agent's own, ``memory.max``
  its limit, ``memory.current`` less inactive file pages its usage, ``memory.events``'s
  ``oom_kill`` how the kernel ended it.
- ``cgroup-v1`` (``cgroup_v1.py``): the same with v1's memory controller
  (``memory.limit_in_bytes``, ``memory.usage_in_bytes``, ``memory.oom_control``).
- ``psutil`` (``process_groups.py``): the resident memory of the task's process group; the
  limit is enforced by the agent core, which kills a group over it (usage.py, rule 2).

A task's process joins its cgroup itself, between fork and exec (the shim writes its pid to the
file ``prepare`` returns), so not one page it touches is charged elsewhere. Cpus are measured
over the process group in every mode (``process_groups.py``).

Which way a host allows (``--cgroups``) is ``memory_detect.py``'s: it knows every way, and the
ways know only this seam. Groups are nested under the agent's own cgroup, so its supervisor's
accounting and limits still cover the tasks.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Protocol

MIB = 1024 * 1024
MODES = ("auto", "v2", "v1", "none")


class ControlUnavailable(RuntimeError):
    """The asked-for way cannot be used here; the message says why."""


class MemoryControl(Protocol):
    name: str  # "cgroup-v2", "cgroup-v1" or "psutil": reported with usage

    def prepare(self, key: str, limit_mib: float) -> str | None:
        """Make task ``key``'s group, limited to ``limit_mib`` (0: no limit); the file its
        process writes its pid to before exec, or None when there is nothing to join.
        Raises OSError when the group cannot be made."""
        ...

    def usage_mib(self, key: str) -> float | None:
        """What the task's group uses now; None when the group is unknown or unreadable (the
        caller falls back to the process group)."""
        ...

    def oom_killed(self, key: str) -> bool:
        """The kernel's OOM killer ended something in the group at its limit."""
        ...

    def release(self, key: str) -> None:
        """The task ended: remove its group (retried at ``close`` if it is still busy)."""
        ...

    def close(self) -> bool:
        """The agent is stopping: remove whatever it made that is empty; True when nothing
        is left (the caller may try again while killed tasks' processes finish dying)."""
        ...


class NoControl:
    """The psutil fallback's side of the seam: no group to make; usage comes from the process
    group and the limit from the core."""

    name = "psutil"

    def prepare(self, key: str, limit_mib: float) -> str | None:
        return None

    def usage_mib(self, key: str) -> float | None:
        return None

    def oom_killed(self, key: str) -> bool:
        return False

    def release(self, key: str) -> None:
        pass

    def close(self) -> bool:
        return True


def task_key(framework_id: str, task_id: str) -> str:
    """A task's group name: fixed length and safe whatever its ids hold."""
    digest = hashlib.sha256(f"{framework_id}\0{task_id}".encode()).hexdigest()
    return f"task-{digest[:20]}"


def agent_key(work_dir: Path) -> str:
    """The agent's own group name: one per work dir, so agents side by side never meet."""
    digest = hashlib.sha256(str(work_dir.resolve()).encode()).hexdigest()
    return f"corral-agent-{digest[:12]}"


def own_cgroup(controller: str, proc_cgroup: str) -> str | None:
    """The agent's cgroup path for a v1 ``controller`` ("" for v2's unified line) in the text
    of /proc/self/cgroup; None when it is not listed."""
    for line in proc_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if controller == "" and parts[0] == "0" and controllers == "":
            return path
        if controller and controller in controllers.split(","):
            return path
    return None


def read_number(path: Path) -> int:
    return int(path.read_text().split()[0])


def read_keyed(path: Path, key: str) -> int | None:
    """The value of ``key`` in a "name value" per line file (memory.stat, memory.events)."""
    for line in path.read_text().splitlines():
        name, _, value = line.partition(" ")
        if name == key:
            return int(value)
    return None
