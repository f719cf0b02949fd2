"""What the host offers when --resources is not given, measured with psutil."""

from __future__ import annotations

from pathlib import Path

import psutil

from corral.resources import Resources

DEFAULT_PORTS = ((31000, 32000),)
MIB = 1024 * 1024


def memory_reserve_mib(total_mib: float) -> float:
    """Left to the OS and the agent itself: 1 GiB, or half of a host smaller than 2 GiB."""
    return 1024.0 if total_mib >= 2048 else total_mib / 2


def detect_resources(work_dir: Path) -> Resources:
    total_mib = psutil.virtual_memory().total / MIB
    probe = work_dir if work_dir.exists() else Path(work_dir.anchor or "/")
    return Resources(
        cpus=float(psutil.cpu_count(logical=True) or 1),
        mem=float(int(total_mib - memory_reserve_mib(total_mib))),
        disk=float(psutil.disk_usage(str(probe)).free // MIB),
        gpus=0.0,
        ports=DEFAULT_PORTS,
    )
