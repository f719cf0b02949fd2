"""Building TaskInfo messages without touching protobuf plumbing."""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping, Sequence

from corral.v1.common_pb2 import CommandInfo, Range, Resources, SimulationInfo, TaskInfo


def _quantity(name: str, value: float) -> float:
    # Caught here so the author sees the mistake at the line that made it, not as a refused call.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be a number, got {value!r}")
    v = float(value)
    if math.isnan(v) or math.isinf(v) or v < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return v


def new_task_id(name: str) -> str:
    """A task id unique enough for a cluster: the task's name plus 48 random bits."""
    return f"{name}-{uuid.uuid4().hex[:12]}"


def task(
    name: str,
    command: str | Sequence[str],
    cpus: float,
    mem: float,
    disk: float = 0,
    gpus: float = 0,
    *,
    env: Mapping[str, str] | None = None,
    secret_env: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    task_id: str | None = None,
    ports: Sequence[tuple[int, int]] = (),
    priority_class: str = "",
    demand: str = "",
    kill_grace_period: float | None = None,
    simulate_seconds: float | None = None,
    simulate_exit_code: int = 0,
) -> TaskInfo:
    """A task to launch. A string ``command`` runs with ``/bin/sh -c``; a sequence is an argv.

    ``mem`` and ``disk`` are in MiB. The agent id is filled in by ``Driver.launch`` from the
    offer. ``simulate_seconds`` only matters on agents started with ``--simulate``.
    ``priority_class`` ("" : the cluster's default) must be a class the master knows;
    ``demand`` names the framework's demand this task serves (``Driver.set_demands``).
    ``secret_env`` is environment whose values are secret: in the task's environment like
    ``env``, sent only to the agent that runs it, never shown by the master (its state, logs,
    events, web page) nor reported back by the agent.
    """
    if not name:
        raise ValueError("a task needs a name")
    if isinstance(command, str):
        if not command.strip():
            raise ValueError("a task needs a command")
        cmd = CommandInfo(value=command, shell=True, environment=dict(env or {}))
    else:
        argv = list(command)
        if not argv or not argv[0]:
            raise ValueError("a task needs a command")
        cmd = CommandInfo(value=argv[0], arguments=argv, shell=False, environment=dict(env or {}))
    if secret_env:
        both = sorted(set(secret_env).intersection(env or {}))
        if both:
            raise ValueError(f"{both[0]!r} is in both env and secret_env")
        cmd.secret_environment.update(secret_env)
    for begin, end in ports:
        if not 0 <= begin <= end <= 65535:
            raise ValueError(f"port range [{begin}-{end}] is not within 0-65535 in order")
    info = TaskInfo(
        task_id=task_id or new_task_id(name),
        name=name,
        command=cmd,
        resources=Resources(
            cpus=_quantity("cpus", cpus),
            mem=_quantity("mem", mem),
            disk=_quantity("disk", disk),
            gpus=_quantity("gpus", gpus),
            ports=[Range(begin=b, end=e) for b, e in ports],
        ),
        labels=dict(labels or {}),
        priority_class=priority_class,
        demand=demand,
    )
    if kill_grace_period is not None:
        info.kill_grace_period_seconds = _quantity("kill_grace_period", kill_grace_period)
    if simulate_seconds is not None:
        info.simulation.CopyFrom(
            SimulationInfo(
                duration_seconds=_quantity("simulate_seconds", simulate_seconds),
                exit_code=simulate_exit_code,
            )
        )
    return info
