"""Which of the agent's GPU devices each task holds (``corral agent --gpu-devices 0,1,2,3``),
as Mesos' GPU isolator and Nomad's device plugins assign them.

Rules:
1. A task asking for ``gpus: n`` gets n specific devices, the lowest free indices first; no
   device is ever held by two tasks. ``n`` must be whole (a fraction of a device cannot be
   handed out); a task asking for more than is free fails its launch (the master counts the
   same devices, so that means a bug or a stale view).
2. The task sees them as ``CUDA_VISIBLE_DEVICES`` and ``NVIDIA_VISIBLE_DEVICES`` (and a
   container as the engine's device request, executor_docker.py).
3. A device is free again when its task's process or container ends (its exit or a failed
   launch), not when the task is merely killed.
4. Assignments are checkpointed (``work_dir/gpu_devices.json``, replaced atomically on every
   change): a restarted agent keeps those of the tasks it re-attached to and frees the rest.
5. Without ``--gpu-devices`` the agent asks ``nvidia-smi`` where it is on the PATH (Mesos'
   GPU isolator does the same through NVML): its devices' indices, in its order. No nvidia-smi:
   no GPUs, silently (most hosts). An nvidia-smi that fails or prints something else: no GPUs,
   said once at start. ``--gpu-devices none`` turns the lookup off.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path

from corral.agent.checkpoint import write_atomically
from corral.agent.core.status_updates import TaskKey

NVIDIA_SMI_QUERY = ("--query-gpu=index", "--format=csv,noheader")
NVIDIA_SMI_TIMEOUT = 10.0  # seconds: a wedged driver must not keep the agent from starting


def parse_devices(text: str) -> tuple[str, ...]:
    """``--gpu-devices 0,1,2,3``: device indices, each once; ValueError names the problem.
    ``none``: no devices (and no nvidia-smi lookup, rule 5)."""
    if text.strip().lower() == "none":
        return ()
    devices = tuple(d.strip() for d in text.split(",") if d.strip())
    if not devices:
        raise ValueError("--gpu-devices needs at least one device index (e.g. 0,1)")
    bad = [d for d in devices if not d.isdigit()]
    if bad:
        raise ValueError(f"--gpu-devices: {bad[0]!r} is not a device index (0, 1, ...)")
    if len(set(devices)) != len(devices):
        raise ValueError("--gpu-devices: a device is listed twice")
    return devices


def discover(
    which: Callable[[str], str | None] = shutil.which,
    run: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run,
) -> tuple[tuple[str, ...], str]:
    """Rule 5: the devices nvidia-smi lists, and what to tell the operator ("" when there is
    nothing to say: no nvidia-smi, or devices found and named by the caller)."""
    path = which("nvidia-smi")
    if path is None:
        return (), ""
    try:
        done = run(
            [path, *NVIDIA_SMI_QUERY],
            capture_output=True,
            text=True,
            timeout=NVIDIA_SMI_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return (), f"nvidia-smi did not answer ({exc}): no GPUs offered; --gpu-devices names them"
    if done.returncode != 0:
        why = (done.stderr or done.stdout).strip().splitlines()
        reason = why[0] if why else f"exit {done.returncode}"
        return (), f"nvidia-smi failed ({reason}): no GPUs offered; --gpu-devices names them"
    text = ",".join(line.strip() for line in done.stdout.splitlines() if line.strip())
    if not text:
        return (), ""
    try:
        return parse_devices(text), ""
    except ValueError:
        return (), f"nvidia-smi printed {text[:80]!r}, not device indices: no GPUs offered"


def visible_env(devices: Iterable[str]) -> dict[str, str]:
    value = ",".join(devices)
    return {"CUDA_VISIBLE_DEVICES": value, "NVIDIA_VISIBLE_DEVICES": value}


class GpuDevices:
    def __init__(self, devices: tuple[str, ...], checkpoint: Path | None) -> None:
        self.devices = devices
        self.checkpoint = checkpoint
        self.held: dict[TaskKey, tuple[str, ...]] = {}
        if checkpoint is not None:
            self._load(checkpoint)

    def _load(self, path: Path) -> None:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            return
        known = set(self.devices)
        for row in data if isinstance(data, list) else ():
            try:
                framework_id, task_id, held = str(row[0]), str(row[1]), tuple(map(str, row[2]))
            except (TypeError, IndexError, ValueError):
                continue
            if set(held) <= known and not set(held) & self._taken():
                self.held[(framework_id, task_id)] = held

    def _taken(self) -> set[str]:
        return {d for held in self.held.values() for d in held}

    def _save(self) -> None:
        if self.checkpoint is None:
            return
        rows = [[f, t, list(d)] for (f, t), d in sorted(self.held.items())]
        write_atomically(self.checkpoint, json.dumps(rows).encode())

    def assign(self, key: TaskKey, gpus: float) -> tuple[str, ...]:
        """Rule 1: the devices for ``key`` (its earlier ones if it holds some); ValueError why
        not."""
        if key in self.held:
            return self.held[key]
        if gpus != math.floor(gpus):
            raise ValueError(
                f"gpus {gpus:g} is not a whole number: this agent hands out whole devices "
                f"({','.join(self.devices)})"
            )
        taken = self._taken()
        free = [d for d in self.devices if d not in taken]
        want = int(gpus)
        if want > len(free):
            raise ValueError(
                f"the task asks for {want} GPU devices and {len(free)} are free "
                f"({','.join(free) or 'none'} of {','.join(self.devices)})"
            )
        self.held[key] = tuple(free[:want])
        self._save()
        return self.held[key]

    def release(self, key: TaskKey) -> None:
        if self.held.pop(key, None) is not None:
            self._save()

    def keep_only(self, keys: set[TaskKey]) -> None:
        """Rule 4: after recovery, the devices of tasks no longer running are free."""
        gone = [k for k in self.held if k not in keys]
        for k in gone:
            del self.held[k]
        if gone:
            self._save()
