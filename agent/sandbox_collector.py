"""The agent's sandbox collection loop: every ``--disk-watch-interval`` seconds, the sandboxes
of ended tasks that the policy (agent/core/sandbox_gc.py) says are due are removed.

A pass lists the sandboxes and measures the disk in a thread (a walk of folders), asks the
executor which sandboxes are in use *after* the walk (a task started meanwhile is in that
answer, and a reused task id gets a new folder, so a removal never meets a live task), then
removes the due ones in a thread, and the framework folders left empty. What went is logged
(``sandboxes removed``: how many, the bytes freed, the age allowed). A pass that fails is
logged and the next comes an interval later.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from corral.agent.core.sandbox_gc import GcPolicy, Sandbox
from corral.agent.executor_process import ProcessExecutor
from corral.logging import get_logger

log = get_logger("corral.agent.sandboxes")


@dataclass(frozen=True, slots=True)
class Removed:
    count: int
    bytes: int


class SandboxCollector:
    def __init__(
        self,
        sandboxes: Path,
        policy: GcPolicy,
        interval: float,
        in_use: Callable[[], set[Path]],
        wall_clock: Callable[[], float],
    ) -> None:
        self.sandboxes = sandboxes
        self.policy = policy
        self.interval = interval
        self.in_use = in_use
        self.wall_clock = wall_clock  # file times are wall-clock times

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            try:
                await self.collect()
            except Exception as exc:  # an unreadable folder, a bug: skip one pass, say so
                log.warning("sandbox collection failed", error=repr(exc))

    async def collect(self) -> Removed:
        """One pass; what it removed."""
        boxes, used = await asyncio.to_thread(_survey, self.sandboxes)
        in_use = {str(p) for p in self.in_use()}
        due = self.policy.due(boxes, in_use, used, self.wall_clock())
        if not due:
            return Removed(0, 0)
        removed = await asyncio.to_thread(_remove, [Path(s.path) for s in due])
        log.info(
            "sandboxes removed",
            count=removed.count,
            bytes=removed.bytes,
            max_age_seconds=round(self.policy.max_age(used), 1),
            disk_used=round(used, 3),
        )
        return removed


def collector_for(
    executor: ProcessExecutor,
    policy: GcPolicy,
    interval: float,
    in_use: Callable[[], set[Path]] | None = None,
) -> SandboxCollector:
    """The collector of an executor's sandboxes; file times are the wall clock's, whatever
    clock the agent runs on. ``in_use``: the sandboxes never collected (default: those of the
    executor's running tasks; an agent with containers adds its containers')."""
    return SandboxCollector(
        executor.sandboxes, policy, interval, in_use or executor.sandboxes_in_use, time.time
    )


def _survey(root: Path) -> tuple[list[Sandbox], float]:
    """Every sandbox with its last write, and the fraction of the disk in use."""
    boxes: list[Sandbox] = []
    if root.is_dir():
        for fw_dir in root.iterdir():
            if not fw_dir.is_dir():
                continue
            for box in fw_dir.iterdir():
                if box.is_dir() and not box.is_symlink():
                    boxes.append(Sandbox(str(box), _last_write(box)))
    usage = shutil.disk_usage(root if root.exists() else root.parent)
    return boxes, usage.used / usage.total if usage.total else 0.0


def _last_write(box: Path) -> float:
    """The newest mtime of the folder and the files directly in it (stdout and stderr are
    written for as long as the task runs)."""
    newest = box.stat().st_mtime
    for entry in box.iterdir():
        try:
            newest = max(newest, entry.lstat().st_mtime)
        except OSError:
            continue  # removed meanwhile
    return newest


def _remove(boxes: list[Path]) -> Removed:
    count = size = 0
    for box in boxes:
        size += _size(box)
        shutil.rmtree(box, ignore_errors=True)
        if not box.exists():
            count += 1
        fw_dir = box.parent
        with contextlib.suppress(OSError):
            fw_dir.rmdir()  # only when empty: the framework has no sandbox left here
    return Removed(count, size)


def _size(box: Path) -> int:
    total = 0
    for path in box.rglob("*"):
        try:
            if path.is_file() and not path.is_symlink():
                total += path.lstat().st_size
        except OSError:
            continue
    return total
