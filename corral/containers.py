"""Containers as data: what a task's image, network, ports and host paths are, and which
containerizers an agent runs (docs/containers.md).

Shared by the master core (an accept is refused when the agent cannot run the task's
container, authz.py checks the image, network and host paths against the ACL) and the agent
(its core hands the task to the containerizer named here). No IO, no protobuf.

Rules:
1. An agent advertises the containerizers it runs as its attribute ``containerizers``, a
   comma-separated list in the order process, docker ("process,docker"), set by ``corral agent
   --containerizers``; an agent without the attribute runs processes only (the default, and
   an agent older than containers).
2. A task with a container needs the agent to advertise that container's containerizer
   (``docker`` for a Docker image); a task without one needs ``process``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum

CONTAINERIZERS_ATTRIBUTE = "containerizers"
PROCESS = "process"
DOCKER = "docker"
KNOWN: tuple[str, ...] = (PROCESS, DOCKER)
DEFAULT: tuple[str, ...] = (PROCESS,)


class Network(Enum):
    """Values equal the wire contract's ContainerNetwork numbers."""

    HOST = 0
    BRIDGE = 1


@dataclass(frozen=True, slots=True)
class PortMapping:
    host_port: int
    container_port: int
    protocol: str = "tcp"


@dataclass(frozen=True, slots=True)
class Volume:
    host_path: str
    container_path: str
    read_only: bool = True


@dataclass(frozen=True, slots=True)
class ContainerSpec:
    """A task's Docker container (TaskInfo.container)."""

    image: str
    network: Network = Network.HOST
    port_mappings: tuple[PortMapping, ...] = ()
    volumes: tuple[Volume, ...] = ()
    force_pull_image: bool = False

    @property
    def containerizer(self) -> str:
        return DOCKER


def parse_containerizers(text: str) -> tuple[str, ...]:
    """``--containerizers process,docker`` as a tuple; ValueError naming what is wrong."""
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    if not names:
        raise ValueError("give at least one containerizer (process, docker)")
    unknown = [n for n in names if n not in KNOWN]
    if unknown:
        raise ValueError(
            f"unknown containerizer {unknown[0]!r}: the agent knows {', '.join(KNOWN)}"
        )
    # In KNOWN's order, so the attribute has one spelling per set: a framework's constraint
    # (containerizers in docker, process,docker) finds every agent that runs images.
    return tuple(n for n in KNOWN if n in names)


def advertised(attributes: Mapping[str, str]) -> tuple[str, ...]:
    """Rule 1: what an agent with these attributes runs."""
    value = attributes.get(CONTAINERIZERS_ATTRIBUTE)
    if value is None:
        return DEFAULT
    return tuple(n.strip() for n in value.split(",") if n.strip())


def needed(container: ContainerSpec | None) -> str:
    """Rule 2: the containerizer a task with this container (or none) needs."""
    return PROCESS if container is None else container.containerizer


def refusal(
    task_id: str, container: ContainerSpec | None, agent_id: str, attributes: Mapping[str, str]
) -> str | None:
    """Why the agent cannot run the task (rule 2), None when it can."""
    want = needed(container)
    has = advertised(attributes)
    if want in has:
        return None
    what = f"runs in image {container.image!r}" if container is not None else "is a process"
    return (
        f"task {task_id!r} {what} and needs the {want!r} containerizer; agent {agent_id} "
        f"runs only {', '.join(has) or 'nothing'} (its attribute "
        f"{CONTAINERIZERS_ATTRIBUTE}; start it with --containerizers {','.join((*has, want))})"
    )


def host_paths(container: ContainerSpec | None) -> Iterable[str]:
    return () if container is None else (v.host_path for v in container.volumes)
