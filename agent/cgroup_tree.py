"""What cgroup v1's memory controller and cgroup v2 share: a folder per task under the agent's
own folder, made with its limit, read for usage and OOM kills, removed when the task ends.

The agent's folder (``memory_control.agent_key``) is made under the agent's own cgroup, so
whatever supervises the agent still accounts for its tasks; folders left busy when their task
ended (the kernel frees a cgroup a moment after its last process) are removed at ``close``.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from corral.agent.memory_control import MIB, ControlUnavailable, read_keyed, read_number


class CgroupTree:
    name = ""
    limit_file = ""
    usage_file = ""
    events_file = ""  # holds "oom_kill N"
    unlimited = ""  # what the limit file takes for "no limit"

    def __init__(self, parent: Path) -> None:
        self.parent = parent
        self._stale: set[Path] = set()

    @classmethod
    def _make_parent(cls, base: Path, key: str) -> Path:
        """The agent's folder under ``base`` (its own cgroup), proved writable by making and
        removing a probe child; ControlUnavailable naming the failure."""
        parent = base / key
        try:
            parent.mkdir(exist_ok=True)
            probe = parent / "probe"
            probe.mkdir(exist_ok=True)
            probe.rmdir()
        except OSError as exc:
            why = exc.strerror or exc
            raise ControlUnavailable(f"cannot make a cgroup under {base}: {why}") from None
        return parent

    def prepare(self, key: str, limit_mib: float) -> str | None:
        group = self.parent / key
        group.mkdir(exist_ok=True)
        self._stale.discard(group)
        limit = str(int(limit_mib * MIB)) if limit_mib > 0 else self.unlimited
        (group / self.limit_file).write_text(limit)
        return str(group / "cgroup.procs")

    def usage_mib(self, key: str) -> float | None:
        """The group's working set: its charged memory less inactive file pages, as kubelet
        counts it (page cache the kernel can drop at once is not pressure)."""
        group = self.parent / key
        try:
            used = read_number(group / self.usage_file)
            inactive = read_keyed(group / "memory.stat", self.inactive_key) or 0
        except (OSError, ValueError):
            return None
        return max(used - inactive, 0) / MIB

    inactive_key = "inactive_file"

    def oom_killed(self, key: str) -> bool:
        try:
            return (read_keyed(self.parent / key / self.events_file, "oom_kill") or 0) > 0
        except (OSError, ValueError):
            return False

    def release(self, key: str) -> None:
        group = self.parent / key
        try:
            group.rmdir()
        except FileNotFoundError:
            pass
        except OSError:
            self._stale.add(group)  # still busy: its last process is being reaped

    def close(self) -> bool:
        """Remove the task groups left (those of tasks killed as the agent stops, and of an
        earlier run's), then the agent's own: the kernel refuses any that still holds a
        process, and a task that outlives the agent keeps its group. True when all are gone."""
        with contextlib.suppress(OSError):
            for group in self.parent.iterdir():
                if group.is_dir() and group.name.startswith("task-"):
                    self._stale.add(group)
        for group in list(self._stale):
            with contextlib.suppress(OSError):
                group.rmdir()
                self._stale.discard(group)
        try:
            self.parent.rmdir()
        except FileNotFoundError:
            return True
        except OSError:
            return False
        return True


def writable(path: Path) -> bool:
    return os.access(path, os.W_OK)
