"""What the tasks' process groups use, measured with psutil: every task's cpus, and its
memory where no cgroup measures it (``memory_control.py``'s psutil fallback).

A task runs in a process group of its own (executor_process.py: pgid == the task's pid), so
whatever it starts is found by group, not by parentage: a daemonized child still counts. One
pass over the host's processes serves every task of a measurement. Memory is the group's
resident set (a shared page counts in every process that maps it: an over-estimate, the safe
side for limits and pressure). Cpus are the group's user+system seconds since the previous
measurement over the time between them; a process that ended meanwhile takes its seconds with
it, so a burst of short children reads low.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

import psutil

from corral.agent.memory_control import MIB


@dataclass(frozen=True, slots=True)
class GroupSample:
    mem_mib: float
    cpu_seconds: float


def sample_groups(pgids: Iterable[int]) -> dict[int, GroupSample]:
    """Each asked-for process group's resident memory and cpu seconds (absent: no process)."""
    wanted = set(pgids)
    mem: dict[int, float] = {}
    cpu: dict[int, float] = {}
    if not wanted:
        return {}
    for proc in psutil.process_iter():
        try:
            group = os.getpgid(proc.pid)
            if group not in wanted:
                continue
            with proc.oneshot():
                rss = proc.memory_info().rss
                times = proc.cpu_times()
        except (psutil.Error, OSError):
            continue  # gone meanwhile, or not ours to read
        mem[group] = mem.get(group, 0.0) + rss / MIB
        cpu[group] = cpu.get(group, 0.0) + times.user + times.system
    return {g: GroupSample(mem[g], cpu[g]) for g in mem}


class CpuRates:
    """Cores used per task between two measurements."""

    def __init__(self) -> None:
        # Per task, (framework id, task id): (time, cpu seconds).
        self._last: dict[tuple[str, str], tuple[float, float]] = {}

    def rate(self, task: tuple[str, str], now: float, cpu_seconds: float) -> float:
        last = self._last.get(task)
        self._last[task] = (now, cpu_seconds)
        if last is None or now <= last[0]:
            return 0.0
        return max(cpu_seconds - last[1], 0.0) / (now - last[0])

    def keep(self, tasks: set[tuple[str, str]]) -> None:
        for gone in self._last.keys() - tasks:
            del self._last[gone]
