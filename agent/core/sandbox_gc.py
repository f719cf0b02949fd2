"""Which ended tasks' sandboxes an agent removes, and when (Mesos' ``--gc_delay`` and
``--gc_disk_headroom``; kubelet's garbage collection of dead containers).

A sandbox is the folder of one run of a task (``sandboxes/<framework>/<task>[.N]``): its
``stdout``, ``stderr`` and whatever the task wrote. Kept, it is what ``corral logs`` reads after
the task ended; kept for ever, it fills the agent's disk. Rules:

1. A sandbox whose task's process runs is never removed, however old.
2. Any other is removed once its age, counted from its last write (the task's end, as near as
   the filesystem tells), passes the age allowed.
3. The age allowed shrinks as the disk fills, by Mesos' formula: ``delay * max(0, 1 - headroom
   - used)``, ``used`` the fraction of the work dir's filesystem in use. With the defaults (a
   week, 0.1) a disk 45 % full keeps sandboxes about three days; one 90 % full keeps none but
   those of running tasks.

Pure: the shell (agent/sandbox_collector.py) measures, lists and removes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

WEEK = 7 * 24 * 3600.0


@dataclass(frozen=True, slots=True)
class Sandbox:
    path: str
    last_write: float  # seconds since the epoch, the newest mtime of the folder and its files


@dataclass(frozen=True, slots=True)
class GcPolicy:
    delay: float = WEEK  # how long an ended task's sandbox is kept on an empty disk
    headroom: float = 0.1  # the part of the disk kept free: sandboxes go sooner as it nears

    def __post_init__(self) -> None:
        if not self.delay >= 0:
            raise ValueError(f"the sandbox delay must be >= 0 seconds, got {self.delay}")
        if not 0 <= self.headroom <= 1:
            raise ValueError(f"the disk headroom must be in [0, 1], got {self.headroom}")

    def max_age(self, used: float) -> float:
        """Rule 3: how old an unused sandbox may get, with ``used`` of the disk in use."""
        return self.delay * max(0.0, 1.0 - self.headroom - used)

    def due(
        self, sandboxes: Iterable[Sandbox], in_use: set[str], used: float, now: float
    ) -> list[Sandbox]:
        """Rules 1 and 2: the sandboxes to remove now, oldest first."""
        limit = self.max_age(used)
        old = [s for s in sandboxes if s.path not in in_use and now - s.last_write >= limit]
        return sorted(old, key=lambda s: (s.last_write, s.path))
