"""A task's ContainerInfo (wire) to a ``corral.containers.ContainerSpec``, checked whole: an
image named, a known type and network, port mappings only on BRIDGE and only to the task's own
ports, absolute volume paths. Each problem raises ``WireError`` naming the field."""

from __future__ import annotations

import posixpath

from corral import limits
from corral.containers import ContainerSpec, Network, PortMapping, Volume
from corral.master.wire.convert_checks import WireError, count, name, text
from corral.resources import Resources
from corral.v1 import common_pb2 as pb

MAX_PORT_MAPPINGS = 64
MAX_VOLUMES = 64
_NETWORKS = {int(n.value): n for n in Network}
_PROTOCOLS = ("tcp", "udp")
# Never mounted into a task, whatever the ACL grants: the engine's socket is root on the host.
ENGINE_SOCKETS = ("/var/run/docker.sock", "/run/docker.sock")


def _in_ranges(port: int, ranges: tuple[tuple[int, int], ...]) -> bool:
    return any(b <= port <= e for b, e in ranges)


def _absolute(path: str, what: str) -> str:
    text(path, what, limits.MAX_VALUE_LENGTH)
    if not path.startswith("/"):
        raise WireError(f"{what} must be an absolute path, got {limits.echo(path)}")
    if "\0" in path or ".." in path.split("/"):
        raise WireError(f"{what} must not contain '..' or NUL, got {limits.echo(path)}")
    return posixpath.normpath(path)


def container_from_pb(t: pb.TaskInfo, resources: Resources, what: str) -> ContainerSpec | None:
    """The task's container, None when it has none."""
    if not t.HasField("container"):
        return None
    c = t.container
    where = f"{what}: container"
    if c.type != pb.CONTAINER_TYPE_DOCKER:
        raise WireError(f"{where}: type must be DOCKER (the one containerizer for images)")
    image = c.docker.image
    if not image.strip() or any(ch.isspace() for ch in image):
        raise WireError(f"{where}: docker.image must name an image, got {limits.echo(image)}")
    name(image, f"{where}: docker.image")
    network = _NETWORKS.get(c.docker.network)
    if network is None:
        raise WireError(f"{where}: docker.network {c.docker.network} is not HOST or BRIDGE")
    count(c.docker.port_mappings, f"{where}: docker.port_mappings", MAX_PORT_MAPPINGS)
    if c.docker.port_mappings and network is not Network.BRIDGE:
        raise WireError(
            f"{where}: docker.port_mappings need network BRIDGE (on HOST the container "
            "uses the task's ports directly)"
        )
    mappings: list[PortMapping] = []
    seen: set[tuple[int, str]] = set()
    for m in c.docker.port_mappings:
        protocol = m.protocol or "tcp"
        if protocol not in _PROTOCOLS:
            raise WireError(f"{where}: port mapping protocol must be tcp or udp, not {protocol!r}")
        if not 1 <= m.container_port <= 65535:
            raise WireError(f"{where}: container_port {m.container_port} is not within 1-65535")
        if not _in_ranges(m.host_port, resources.ports):
            raise WireError(
                f"{where}: host_port {m.host_port} is not one of the task's ports "
                "(map only ports the task was offered and asks for)"
            )
        if (m.host_port, protocol) in seen:
            raise WireError(f"{where}: host_port {m.host_port}/{protocol} is mapped twice")
        seen.add((m.host_port, protocol))
        mappings.append(PortMapping(m.host_port, m.container_port, protocol))
    count(c.volumes, f"{where}: volumes", MAX_VOLUMES)
    for v in c.volumes:
        top = posixpath.normpath(v.host_path).rstrip("/") + "/"
        if any(f"{sock}/".startswith(top) for sock in ENGINE_SOCKETS):
            raise WireError(
                f"{where}: host_path {limits.echo(v.host_path)} would give the task the "
                "container engine's socket (root on the host): never mounted"
            )
    volumes = tuple(
        Volume(
            _absolute(v.host_path, f"{where}: volume host_path"),
            _absolute(v.container_path, f"{where}: volume container_path"),
            read_only=v.mode != pb.VOLUME_MODE_RW,
        )
        for v in c.volumes
    )
    return ContainerSpec(
        image=image,
        network=network,
        port_mappings=tuple(mappings),
        volumes=volumes,
        force_pull_image=c.docker.force_pull_image,
    )


def container_to_pb(c: ContainerSpec, out: pb.ContainerInfo) -> pb.ContainerInfo:
    """The task's container as the master's state shows it."""
    out.type = pb.CONTAINER_TYPE_DOCKER
    out.docker.image = c.image
    out.docker.network = c.network.value  # type: ignore[assignment]
    out.docker.force_pull_image = c.force_pull_image
    for m in c.port_mappings:
        out.docker.port_mappings.add(
            host_port=m.host_port, container_port=m.container_port, protocol=m.protocol
        )
    for v in c.volumes:
        out.volumes.add(
            host_path=v.host_path,
            container_path=v.container_path,
            mode=pb.VOLUME_MODE_RO if v.read_only else pb.VOLUME_MODE_RW,
        )
    return out
