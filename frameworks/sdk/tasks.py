"""Building TaskInfo messages without touching protobuf plumbing."""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping, Sequence

from corral.v1.common_pb2 import (
    CONTAINER_NETWORK_BRIDGE,
    CONTAINER_NETWORK_HOST,
    CONTAINER_TYPE_DOCKER,
    VOLUME_MODE_RO,
    VOLUME_MODE_RW,
    CommandInfo,
    ContainerInfo,
    DockerInfo,
    PortMapping,
    Range,
    Resources,
    SimulationInfo,
    TaskInfo,
    Volume,
)


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


def docker(
    image: str,
    *,
    network: str = "host",
    port_mappings: Mapping[int, int] | Sequence[tuple[int, int]] = (),
    volumes: Sequence[tuple[str, str] | tuple[str, str, str]] = (),
    force_pull_image: bool = False,
) -> ContainerInfo:
    """A Docker container for ``task(container=...)`` (Mesos' ContainerInfo, type DOCKER).

    ``network`` is "host" (the default, as in Mesos) or "bridge"; ``port_mappings`` maps
    container ports to host ports, ``{8080: 31000}`` or ``[(8080, 31000)]``, each host port one
    of the task's ``ports`` (bridge only); ``volumes`` are ``(host_path, container_path)`` or
    ``(host_path, container_path, "rw")``, read-only unless "rw". The agent must run the docker
    containerizer (``corral agent --containerizers process,docker``); the master refuses the
    task on one that does not."""
    if not image or any(ch.isspace() for ch in image):
        raise ValueError(f"docker needs an image name, got {image!r}")
    nets = {"host": CONTAINER_NETWORK_HOST, "bridge": CONTAINER_NETWORK_BRIDGE}
    if network.lower() not in nets:
        raise ValueError(f"network must be 'host' or 'bridge', got {network!r}")
    pairs = list(port_mappings.items()) if isinstance(port_mappings, Mapping) else port_mappings
    if pairs and network.lower() != "bridge":
        raise ValueError("port_mappings need network='bridge'")
    info = ContainerInfo(
        type=CONTAINER_TYPE_DOCKER,
        docker=DockerInfo(
            image=image,
            network=nets[network.lower()],
            force_pull_image=force_pull_image,
            port_mappings=[PortMapping(container_port=c, host_port=h) for c, h in pairs],
        ),
    )
    for volume in volumes:
        host, inside, *mode = volume
        if not host.startswith("/") or not inside.startswith("/"):
            raise ValueError(f"volume paths must be absolute, got {host!r} -> {inside!r}")
        if mode and mode[0] not in ("ro", "rw"):
            raise ValueError(f"volume mode must be 'ro' or 'rw', got {mode[0]!r}")
        rw = bool(mode) and mode[0] == "rw"
        info.volumes.append(
            Volume(
                host_path=host,
                container_path=inside,
                mode=VOLUME_MODE_RW if rw else VOLUME_MODE_RO,
            )
        )
    return info


def task(
    name: str,
    command: str | Sequence[str] | None,
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
    cpus_limit: float | None = None,
    mem_limit: float | None = None,
    revocable: bool = False,
    container: ContainerInfo | None = None,
) -> TaskInfo:
    """A task to launch. A string ``command`` runs with ``/bin/sh -c``; a sequence is an argv.

    ``mem`` and ``disk`` are in MiB. The agent id is filled in by ``Driver.launch`` from the
    offer. ``simulate_seconds`` only matters on agents started with ``--simulate``.
    ``priority_class`` ("" : the cluster's default) must be a class the master knows;
    ``demand`` names the framework's demand this task serves (``Driver.set_demands``).

    ``cpus`` and ``mem`` are the task's request (what it is charged); ``cpus_limit`` and
    ``mem_limit`` its limits, at or above them (the agent kills a task over its memory limit:
    TASK_FAILED, reason MEMORY_LIMIT). Together they make its QoS class (``qos_class``): no
    cpus and no mem requested is BestEffort. ``revocable`` marks a task for revocable offers
    (``OfferView.revocable``; the framework needs the REVOCABLE_RESOURCES capability): it may be
    killed when the resources are taken back (REVOCABLE_RESOURCES_RECLAIMED).
    ``secret_env`` is environment whose values are secret: in the task's environment like
    ``env``, sent only to the agent that runs it, never shown by the master (its state, logs,
    events, web page) nor reported back by the agent.
    ``container`` (``docker(...)``) runs the task in an image; its ``command`` may then be None
    (the image's own entrypoint and command) or override the image's.
    """
    if not name:
        raise ValueError("a task needs a name")
    if command is None or (container is not None and not command):
        if container is None:
            raise ValueError("a task needs a command (or a container, whose image has one)")
        cmd = CommandInfo(environment=dict(env or {}))
    elif isinstance(command, str):
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
    if cpus_limit is not None or mem_limit is not None:
        lim_cpus = _quantity("cpus_limit", cpus_limit) if cpus_limit is not None else 0.0
        lim_mem = _quantity("mem_limit", mem_limit) if mem_limit is not None else 0.0
        for name, request, limit in (("cpus", cpus, lim_cpus), ("mem", mem, lim_mem)):
            if limit and limit < request:
                raise ValueError(f"{name}_limit {limit:g} is below the {name} request {request:g}")
        info.limits.CopyFrom(Resources(cpus=lim_cpus, mem=lim_mem))
    if revocable:
        info.revocable = True
    if container is not None:
        info.container.CopyFrom(container)
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


def qos_class(task: TaskInfo) -> str:
    """The task's QoS class, by Kubernetes' rule: "Guaranteed" (cpus and mem requested, both
    limited to exactly their request), "BestEffort" (no cpus and no mem requested, no limit),
    else "Burstable". (The SDK keeps its own copy of ``corral.qos``'s rule: it depends on the
    wire contract only.)"""
    r, lim = task.resources, task.limits
    if r.cpus <= 0 and r.mem <= 0 and lim.cpus <= 0 and lim.mem <= 0:
        return "BestEffort"
    if r.cpus > 0 and r.mem > 0 and lim.cpus == r.cpus and lim.mem == r.mem:
        return "Guaranteed"
    return "Burstable"
