"""The app a serving framework keeps running, as given in ``app.json`` (docs/frameworks.md):
parsed and checked here, so a mistake is one message naming the field (``AppError``, exit 2)."""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from corral.frameworks import sdk
from corral.frameworks.framework_info import framework_info
from corral.frameworks.placement_args import (
    CONTAINERIZERS_ATTRIBUTE,
    DOCKER_AGENT_VALUES,
    docker_agents,
)
from corral.frameworks.sdk.json_input import BadJson, parse_json

Protocol = Literal["HTTP", "TCP", "COMMAND"]


class AppError(ValueError):
    """An app file or object that cannot run; the message names the field."""


@dataclass(frozen=True, slots=True)
class HealthCheck:
    """Marathon's health check, run by the framework: HTTP GET ``path`` (2xx/3xx is healthy)
    or a TCP connect on the instance's port ``port_index`` on its agent's hostname, or a shell
    ``command`` (exit 0 is healthy; see docs/frameworks.md for where it runs). Failures in the
    first ``grace_period`` seconds before the first success do not count; after
    ``max_consecutive_failures`` in a row (0: never) the instance is killed and replaced."""

    protocol: Protocol = "HTTP"
    path: str = "/"
    port_index: int = 0
    command: str = ""
    grace_period: float = 15.0
    interval: float = 5.0
    timeout: float = 2.0
    max_consecutive_failures: int = 3


@dataclass(frozen=True, slots=True)
class ReadinessCheck:
    """Whether an instance should receive traffic, and so whether a deployment step may go on:
    the same probes as ``HealthCheck``, every ``interval`` seconds, each within ``timeout``. A
    failing readiness check takes the instance out of the app's endpoints and never kills it
    (that is the health check's job). Until its first success an instance is not ready."""

    protocol: Protocol = "HTTP"
    path: str = "/"
    port_index: int = 0
    command: str = ""
    interval: float = 5.0
    timeout: float = 2.0


@dataclass(frozen=True, slots=True)
class BackoffSpec:
    """Delay before launching again after an instance failed: ``initial`` seconds, times
    ``factor`` per failure in a row, at most ``max``; reset once an instance has stayed up
    (healthy, if checked) for ``reset_after`` seconds."""

    initial: float = 1.0
    factor: float = 2.0
    max: float = 60.0
    reset_after: float = 10.0


@dataclass(frozen=True, slots=True)
class Upgrade:
    """Marathon's upgradeStrategy for a rolling restart: keep at least
    ``minimum_health_capacity`` x instances healthy, run at most ``maximum_over_capacity`` x
    instances extra meanwhile."""

    minimum_health_capacity: float = 1.0
    maximum_over_capacity: float = 1.0
    # The serving service's deployments (docs/frameworks.md): a deployment fails after this
    # many instances of its version failed (ended on their own or unhealthy; 0: never), or
    # after this many seconds without progress (Kubernetes' progressDeadlineSeconds).
    failure_threshold: int = 3
    progress_deadline: float = 600.0


@dataclass(frozen=True, slots=True)
class PortMapping:
    """Marathon's ``portMappings`` entry: ``container_port`` published on a host port the
    instance takes from its offer (``hostPort`` 0, the only kind Corral places: a fixed host
    port would need offers to be searched for one port)."""

    container_port: int
    name: str = ""


@dataclass(frozen=True, slots=True)
class Volume:
    """Marathon's ``container.volumes`` entry: ``host_path`` mounted at ``container_path``."""

    container_path: str
    host_path: str
    mode: Literal["RO", "RW"] = "RO"


@dataclass(frozen=True, slots=True)
class Container:
    """Marathon's ``container`` of type DOCKER: the app's instances run in ``image`` on agents
    started with ``--containerizers process,docker`` (docs/containers.md). With ``BRIDGE``
    network the app's ports are its ``port_mappings`` (one host port each, from the offer);
    with ``HOST`` the instance listens on ``$PORT0..`` itself, as a process does."""

    image: str
    network: Literal["HOST", "BRIDGE"] = "HOST"
    port_mappings: tuple[PortMapping, ...] = ()
    force_pull_image: bool = False
    volumes: tuple[Volume, ...] = ()

    def info(self, host_ports: list[int]) -> sdk.ContainerInfo:
        """The task's ContainerInfo, the mappings' host ports being ``host_ports`` in order."""
        mapped = self.port_mappings
        return sdk.docker(
            self.image,
            network=self.network.lower(),
            port_mappings=[
                (m.container_port, h)
                for m, h in zip(self.port_mappings, host_ports[: len(mapped)], strict=True)
            ],
            volumes=[(v.host_path, v.container_path, v.mode.lower()) for v in self.volumes],
            force_pull_image=self.force_pull_image,
        )

    def to_json(self) -> dict[str, Any]:
        docker: dict[str, Any] = {
            "image": self.image,
            "network": self.network,
            "forcePullImage": self.force_pull_image,
        }
        if self.port_mappings:
            docker["portMappings"] = [
                {"containerPort": m.container_port, "hostPort": 0, "name": m.name}
                if m.name
                else {"containerPort": m.container_port, "hostPort": 0}
                for m in self.port_mappings
            ]
        return {
            "type": "DOCKER",
            "docker": docker,
            "volumes": [
                {"containerPath": v.container_path, "hostPath": v.host_path, "mode": v.mode}
                for v in self.volumes
            ],
        }


@dataclass(frozen=True, slots=True)
class AppSpec:
    id: str
    # "" runs the image's own entrypoint and command (an app with a container only).
    command: str
    instances: int = 1
    cpus: float = 0.1
    mem: float = 64.0
    disk: float = 0.0
    gpus: float = 0.0
    ports: int = 0
    # DNS names of the ports, in order (``_NAME._tcp.APP.DOMAIN``); a port without one is
    # ``portI`` (serving/dns.py).
    port_names: tuple[str, ...] = ()
    priority_class: str = "serving"
    role: str = "*"
    env: Mapping[str, str] = field(default_factory=dict)
    constraints: tuple[sdk.Rule, ...] = ()
    spread: sdk.Spread | None = None
    tolerations: tuple[sdk.Toleration, ...] = ()
    health_check: HealthCheck | None = None
    readiness_check: ReadinessCheck | None = None
    backoff: BackoffSpec = BackoffSpec()
    upgrade: Upgrade = Upgrade()
    kill_grace_period: float | None = None
    # An instance a scale-down or a rolling restart stops leaves the endpoints (and DNS) first,
    # and is killed this many seconds later, so proxies and resolvers stop sending it traffic
    # before it goes (an instance that was not ready is killed at once).
    drain_seconds: float = 2.0
    # How long an instance "runs" on agents started with --simulate (ignored by real agents).
    simulate_seconds: float = 86400.0
    # Not part of the app's JSON: the serving service counts `restart`s here, so a restart
    # makes a new version with nothing of the app changed (Marathon's restart does the same).
    restart_generation: int = 0
    # Marathon's container.docker: the instances run in an image (None: processes).
    container: Container | None = None

    @property
    def version(self) -> str:
        """What makes an instance out of date: a change here means a rolling restart."""
        shape = [self.cpus, self.mem, self.disk, self.gpus, self.ports]
        parts: list[object] = [self.command, sorted(self.env.items()), shape]
        if self.restart_generation:
            parts.append(self.restart_generation)
        if self.container is not None:  # absent, the versions of process apps stay as they were
            parts.append(self.container.to_json())
        what = json.dumps(parts)
        return hashlib.sha256(what.encode()).hexdigest()[:8]

    def framework_info(self, role: str | None = None, **fields: Any) -> sdk.FrameworkInfo:
        """What the app's framework subscribes with (framework_info.py): its tolerations, and
        the GPU capability when an instance asks for GPUs. ``role``: instead of the app's."""
        return framework_info(
            f"serving:{self.id}",
            role or self.role,
            gpus=self.gpus > 0,
            tolerations=self.tolerations,
            **fields,
        )

    def demand(self, count: int) -> sdk.Demand:
        cluster = [
            sdk.Constraint.equals(r.field, r.value)
            for r in self.constraints
            if r.operator == "CLUSTER" and r.value
        ]
        return sdk.Demand(
            self.id,
            count,
            cpus=self.cpus,
            mem=self.mem,
            disk=self.disk,
            gpus=self.gpus,
            priority_class=self.priority_class,
            constraints=cluster + ([docker_agents()] if self.container is not None else []),
            tolerations=self.tolerations,
            spread=self.spread,
        )

    def placement_rules(self) -> tuple[sdk.Rule, ...]:
        """The app's constraints, and for an app in a container: agents that run images."""
        if self.container is None:
            return self.constraints
        return (*self.constraints, DOCKER_AGENT_RULE)

    @classmethod
    def load(cls, path: str | Path) -> AppSpec:
        try:
            text = Path(path).read_text()
        except OSError as err:
            raise AppError(f"cannot read {path}: {err.strerror or err}") from None
        try:
            data = parse_json(text, str(path))
        except BadJson as err:
            raise AppError(str(err)) from None
        return cls.from_json(data)

    @classmethod
    def from_json(cls, data: object) -> AppSpec:
        d = _object(data, "the app")
        _known(d, "the app", _APP_KEYS)
        container = _container(d["container"]) if d.get("container") is not None else None
        ports = _int(d.get("ports", 0), "ports", 0)
        port_names = _port_names(d.get("port_names", []))
        if container is not None and container.port_mappings:
            # Marathon: with portMappings the app's ports are the mappings' host ports.
            mapped = len(container.port_mappings)
            if "ports" in d and ports != mapped:
                raise AppError(
                    f"ports: {ports}, but container.docker.portMappings has {mapped} (leave ports "
                    "out: each mapping takes one host port)"
                )
            ports = mapped
            named = tuple(m.name for m in container.port_mappings)
            if any(named):
                if d.get("port_names") and port_names != named:
                    raise AppError("port_names: the portMappings name the ports; give one or other")
                if not all(named):
                    raise AppError(
                        "container.docker.portMappings: name every mapping or none (the names "
                        "are the ports' DNS names)"
                    )
                port_names = named
        # Without a command an app in a container runs its image's own.
        needs_command = "command" in d or container is None
        command = _text(d.get("command"), "command") if needs_command else ""
        spec = cls(
            id=_name(d.get("id"), "id"),
            command=command,
            instances=_int(d.get("instances", 1), "instances", 0),
            cpus=_num(d.get("cpus", 0.1), "cpus"),
            mem=_num(d.get("mem", 64), "mem"),
            disk=_num(d.get("disk", 0), "disk"),
            gpus=_num(d.get("gpus", 0), "gpus"),
            ports=ports,
            port_names=port_names,
            priority_class=_name(d.get("priority_class", "serving"), "priority_class"),
            role=_name(d.get("role", "*"), "role"),
            env=_env(d.get("env", {})),
            constraints=_rules(d.get("constraints", [])),
            spread=_spread(d["spread"]) if d.get("spread") is not None else None,
            tolerations=_tolerations(d.get("tolerations", [])),
            health_check=_health(d["health_check"]) if d.get("health_check") else None,
            readiness_check=(
                _readiness(d["readiness_check"]) if d.get("readiness_check") else None
            ),
            backoff=_backoff(d.get("backoff", {})),
            upgrade=_upgrade(d.get("upgrade", {})),
            kill_grace_period=(
                None
                if d.get("kill_grace_period") is None
                else _num(d["kill_grace_period"], "kill_grace_period")
            ),
            simulate_seconds=_num(d.get("simulate_seconds", 86400), "simulate_seconds"),
            drain_seconds=_num(d.get("drain_seconds", 2), "drain_seconds"),
            container=container,
        )
        if spec.cpus <= 0 and spec.mem <= 0:
            raise AppError("cpus, mem: an instance must ask for some cpus or mem")
        if len(spec.port_names) > spec.ports:
            raise AppError(
                f"port_names: {len(spec.port_names)} names for {spec.ports} ports (name at most "
                "one per port)"
            )
        hc = spec.health_check
        if hc is not None and hc.protocol != "COMMAND" and hc.port_index >= spec.ports:
            raise AppError(
                f"health_check.port_index: {hc.port_index} needs ports >= {hc.port_index + 1} "
                f"(the app asks for {spec.ports})"
            )
        rc = spec.readiness_check
        if rc is not None and rc.protocol != "COMMAND" and rc.port_index >= spec.ports:
            raise AppError(
                f"readiness_check.port_index: {rc.port_index} needs ports >= {rc.port_index + 1} "
                f"(the app asks for {spec.ports})"
            )
        return spec

    def to_json(self) -> dict[str, Any]:
        """The app as ``from_json`` reads it (``from_json(spec.to_json()) == spec``), every
        field spelled out: what the serving service stores and shows."""
        out: dict[str, Any] = {
            "id": self.id,
            "command": self.command,
            "instances": self.instances,
            "cpus": self.cpus,
            "mem": self.mem,
            "disk": self.disk,
            "gpus": self.gpus,
            "ports": self.ports,
            "port_names": list(self.port_names),
            "priority_class": self.priority_class,
            "role": self.role,
            "env": dict(self.env),
            "constraints": [
                [r.field, r.operator, r.value] if r.value else [r.field, r.operator]
                for r in self.constraints
            ],
            "spread": None,
            "tolerations": [_toleration_json(t) for t in self.tolerations],
            "health_check": _dataclass_json(self.health_check),
            "readiness_check": _dataclass_json(self.readiness_check),
            "backoff": _dataclass_json(self.backoff),
            "upgrade": _dataclass_json(self.upgrade),
            "kill_grace_period": self.kill_grace_period,
            "simulate_seconds": self.simulate_seconds,
            "drain_seconds": self.drain_seconds,
            "container": None if self.container is None else self.container.to_json(),
        }
        if self.container is not None and not self.command:
            del out["command"]  # the image's own command: from_json reads no command so
        if self.spread is not None:
            out["spread"] = {
                "topology_key": self.spread.topology_key,
                "max_skew": self.spread.max_skew,
                "when_unsatisfiable": self.spread.when_unsatisfiable,
            }
        return out


_APP_KEYS = {
    "id",
    "command",
    "instances",
    "cpus",
    "mem",
    "disk",
    "gpus",
    "ports",
    "port_names",
    "priority_class",
    "role",
    "env",
    "constraints",
    "spread",
    "tolerations",
    "health_check",
    "readiness_check",
    "backoff",
    "upgrade",
    "kill_grace_period",
    "simulate_seconds",
    "drain_seconds",
    "container",
}

# Agents that run images (`corral agent --containerizers process,docker` says so in this
# attribute), as a Marathon constraint for the Placer; the demand's twin is docker_agents().
DOCKER_AGENT_RULE = sdk.Rule(CONTAINERIZERS_ATTRIBUTE, "LIKE", "|".join(DOCKER_AGENT_VALUES))


def _dataclass_json(value: object) -> dict[str, Any] | None:
    if value is None:
        return None
    return {name: getattr(value, name) for name in value.__dataclass_fields__}  # type: ignore[attr-defined]


def _toleration_json(t: sdk.Toleration) -> dict[str, Any]:
    out: dict[str, Any] = {"key": t.key, "operator": "Exists" if t.any_value else "Equal"}
    if not t.any_value:
        out["value"] = t.value
    if t.effect is not None:
        out["effect"] = t.effect
    return out


def _object(value: object, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise AppError(f"{where} must be a JSON object, got {type(value).__name__}")
    return value


def _known(d: Mapping[str, Any], where: str, keys: set[str]) -> None:
    unknown = sorted(set(d) - keys)
    if unknown:
        raise AppError(f"{where}: unknown field {unknown[0]!r} (known: {', '.join(sorted(keys))})")


def _text(value: object, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise AppError(f"{name}: must be a non-empty string, got {value!r}")
    return value


def _name(value: object, name: str) -> str:
    text = _text(value, name)
    if any(c.isspace() or not c.isprintable() for c in text):
        raise AppError(f"{name}: {text!r} has whitespace or unprintable characters")
    return text


def _num(value: object, name: str, low: float = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise AppError(f"{name}: must be a number, got {value!r}")
    if not math.isfinite(value) or value < low:
        raise AppError(f"{name}: must be a finite number >= {low:g}, got {value!r}")
    return float(value)


def _positive(value: object, name: str) -> float:
    v = _num(value, name)
    if v <= 0:
        raise AppError(f"{name}: must be more than 0, got {value!r}")
    return v


def _int(value: object, name: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise AppError(f"{name}: must be a whole number >= {low}, got {value!r}")
    return value


_LABEL = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")


def _port_names(value: object) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise AppError(f"port_names: must be a list of names, got {value!r}")
    for i, name in enumerate(value):
        if not isinstance(name, str) or not _LABEL.fullmatch(name):
            raise AppError(
                f"port_names[{i}]: {name!r} is not a DNS label (a-z, 0-9 and '-', at most 63)"
            )
    if len(set(value)) != len(value):
        raise AppError(f"port_names: a name is used twice in {value!r}")
    return tuple(value)


def _env(value: object) -> dict[str, str]:
    d = _object(value, "env")
    bad = [k for k, v in d.items() if not isinstance(v, str)]
    if bad:
        raise AppError(f"env.{bad[0]}: must be a string, got {d[bad[0]]!r}")
    return dict(d)


def _rules(value: object) -> tuple[sdk.Rule, ...]:
    if not isinstance(value, list):
        raise AppError(f"constraints: must be a list of [field, operator, value], got {value!r}")
    rules = []
    for i, item in enumerate(value):
        if not isinstance(item, list):
            raise AppError(f"constraints[{i}]: must be [field, operator, value], got {item!r}")
        try:
            rules.append(sdk.Rule.parse(item))
        except ValueError as err:
            raise AppError(f"constraints[{i}]: {err}") from None
    return tuple(rules)


def _spread(value: object) -> sdk.Spread:
    d = _object(value, "spread")
    _known(d, "spread", {"topology_key", "max_skew", "when_unsatisfiable"})
    key = _name(d.get("topology_key"), "spread.topology_key")
    skew = _int(d.get("max_skew", 1), "spread.max_skew", 1)
    try:
        return sdk.Spread(key, skew, d.get("when_unsatisfiable", "DoNotSchedule"))
    except ValueError as err:
        raise AppError(f"spread.when_unsatisfiable: {err}") from None


def _tolerations(value: object) -> tuple[sdk.Toleration, ...]:
    if not isinstance(value, list):
        raise AppError(f"tolerations: must be a list of objects or strings, got {value!r}")
    out = []
    for i, item in enumerate(value):
        where = f"tolerations[{i}]"
        if isinstance(item, str):  # the taint's own spelling: "gpu-sku=inference:NoSchedule"
            try:
                out.append(sdk.Toleration.parse(item))
            except ValueError as err:
                raise AppError(f"{where}: {err}") from None
            continue
        d = _object(item, where)
        _known(d, where, {"key", "operator", "value", "effect"})
        op = d.get("operator", "Equal")
        if op not in ("Equal", "Exists"):
            raise AppError(f"{where}.operator: must be Equal or Exists, got {op!r}")
        try:
            out.append(
                sdk.Toleration(
                    _name(d.get("key"), f"{where}.key"),
                    str(d.get("value", "")),
                    op == "Exists",
                    d.get("effect"),
                )
            )
        except ValueError as err:
            raise AppError(f"{where}: {err}") from None
    return tuple(out)


def _health(value: object) -> HealthCheck:
    d = _object(value, "health_check")
    _known(d, "health_check", set(HealthCheck.__dataclass_fields__))
    protocol = d.get("protocol", "HTTP")
    if protocol not in ("HTTP", "TCP", "COMMAND"):
        raise AppError(f"health_check.protocol: must be HTTP, TCP or COMMAND, got {protocol!r}")
    if protocol == "COMMAND":
        _text(d.get("command"), "health_check.command")
    path = d.get("path", "/")
    if not isinstance(path, str) or not path.startswith("/"):
        raise AppError(f"health_check.path: must start with '/', got {path!r}")
    return HealthCheck(
        protocol=protocol,
        path=path,
        port_index=_int(d.get("port_index", 0), "health_check.port_index", 0),
        command=str(d.get("command", "")),
        grace_period=_num(d.get("grace_period", 15), "health_check.grace_period"),
        interval=_positive(d.get("interval", 5), "health_check.interval"),
        timeout=_positive(d.get("timeout", 2), "health_check.timeout"),
        max_consecutive_failures=_int(
            d.get("max_consecutive_failures", 3), "health_check.max_consecutive_failures", 0
        ),
    )


def _readiness(value: object) -> ReadinessCheck:
    d = _object(value, "readiness_check")
    _known(d, "readiness_check", set(ReadinessCheck.__dataclass_fields__))
    protocol = d.get("protocol", "HTTP")
    if protocol not in ("HTTP", "TCP", "COMMAND"):
        raise AppError(f"readiness_check.protocol: must be HTTP, TCP or COMMAND, got {protocol!r}")
    if protocol == "COMMAND":
        _text(d.get("command"), "readiness_check.command")
    path = d.get("path", "/")
    if not isinstance(path, str) or not path.startswith("/"):
        raise AppError(f"readiness_check.path: must start with '/', got {path!r}")
    return ReadinessCheck(
        protocol=protocol,
        path=path,
        port_index=_int(d.get("port_index", 0), "readiness_check.port_index", 0),
        command=str(d.get("command", "")),
        interval=_positive(d.get("interval", 5), "readiness_check.interval"),
        timeout=_positive(d.get("timeout", 2), "readiness_check.timeout"),
    )


def _backoff(value: object) -> BackoffSpec:
    d = _object(value, "backoff")
    _known(d, "backoff", set(BackoffSpec.__dataclass_fields__))
    b = BackoffSpec(
        initial=_positive(d.get("initial", 1), "backoff.initial"),
        factor=_num(d.get("factor", 2), "backoff.factor", 1),
        max=_positive(d.get("max", 60), "backoff.max"),
        reset_after=_num(d.get("reset_after", 10), "backoff.reset_after"),
    )
    if b.max < b.initial:
        raise AppError(f"backoff.max: must be >= backoff.initial ({b.initial:g}), got {b.max:g}")
    return b


def _upgrade(value: object) -> Upgrade:
    d = _object(value, "upgrade")
    _known(d, "upgrade", set(Upgrade.__dataclass_fields__))
    u = Upgrade(
        minimum_health_capacity=_num(
            d.get("minimum_health_capacity", 1), "upgrade.minimum_health_capacity"
        ),
        maximum_over_capacity=_num(
            d.get("maximum_over_capacity", 1), "upgrade.maximum_over_capacity"
        ),
        failure_threshold=_int(d.get("failure_threshold", 3), "upgrade.failure_threshold", 0),
        progress_deadline=_positive(d.get("progress_deadline", 600), "upgrade.progress_deadline"),
    )
    if u.minimum_health_capacity > 1 or u.maximum_over_capacity > 1:
        raise AppError("upgrade: minimum_health_capacity and maximum_over_capacity are within 0..1")
    if u.minimum_health_capacity == 1 and u.maximum_over_capacity == 0:
        # Marathon refuses this too: no old instance may go and no new one may start.
        raise AppError(
            "upgrade: minimum_health_capacity 1 with maximum_over_capacity 0 can never restart"
        )
    return u


def _container(value: object) -> Container:
    """Marathon's ``container``: ``{"type": "DOCKER", "docker": {"image", "network",
    "portMappings", "forcePullImage"}, "volumes": [...]}``."""
    d = _object(value, "container")
    _known(d, "container", {"type", "docker", "volumes"})
    kind = d.get("type", "DOCKER")
    if kind != "DOCKER":
        raise AppError(f"container.type: only DOCKER runs here, got {kind!r}")
    docker = _object(d.get("docker"), "container.docker")
    _known(
        docker,
        "container.docker",
        {"image", "network", "portMappings", "forcePullImage", "privileged", "parameters"},
    )
    image = _name(docker.get("image"), "container.docker.image")
    network = docker.get("network", "HOST")
    if network not in ("HOST", "BRIDGE"):
        raise AppError(f"container.docker.network: must be HOST or BRIDGE, got {network!r}")
    if docker.get("privileged"):
        raise AppError("container.docker.privileged: Corral never runs a privileged container")
    if docker.get("parameters"):
        raise AppError("container.docker.parameters: free-form engine flags are not supported")
    force = docker.get("forcePullImage", False)
    if not isinstance(force, bool):
        raise AppError(f"container.docker.forcePullImage: must be true or false, got {force!r}")
    raw = docker.get("portMappings", [])
    if not isinstance(raw, list):
        raise AppError(f"container.docker.portMappings: must be a list, got {raw!r}")
    if raw and network != "BRIDGE":
        raise AppError(
            "container.docker.portMappings: need network BRIDGE (with HOST the app listens on "
            "$PORT0.. itself; ask for them with ports)"
        )
    mappings = []
    for i, item in enumerate(raw):
        where = f"container.docker.portMappings[{i}]"
        m = _object(item, where)
        _known(m, where, {"containerPort", "hostPort", "servicePort", "name", "protocol", "labels"})
        port = _int(m.get("containerPort"), f"{where}.containerPort", 1)
        if port > 65535:
            raise AppError(f"{where}.containerPort: must be 1..65535, got {port}")
        if m.get("hostPort", 0) != 0:
            raise AppError(
                f"{where}.hostPort: only 0 (a host port from the offer, given to the instance "
                f"as $PORT{i}) is supported, got {m.get('hostPort')!r}"
            )
        if m.get("protocol", "tcp") != "tcp":
            raise AppError(f"{where}.protocol: only tcp is supported, got {m.get('protocol')!r}")
        name = m.get("name", "")
        if name and (not isinstance(name, str) or not _LABEL.fullmatch(name)):
            raise AppError(f"{where}.name: {name!r} is not a DNS label (a-z, 0-9 and '-')")
        mappings.append(PortMapping(port, name))
    if len({m.container_port for m in mappings}) != len(mappings):
        raise AppError("container.docker.portMappings: a containerPort is mapped twice")
    raw_volumes = d.get("volumes", [])
    if not isinstance(raw_volumes, list):
        raise AppError(f"container.volumes: must be a list, got {raw_volumes!r}")
    volumes = []
    for i, item in enumerate(raw_volumes):
        where = f"container.volumes[{i}]"
        v = _object(item, where)
        _known(v, where, {"containerPath", "hostPath", "mode"})
        inside = _text(v.get("containerPath"), f"{where}.containerPath")
        host = _text(v.get("hostPath"), f"{where}.hostPath")
        if not inside.startswith("/") or not host.startswith("/"):
            raise AppError(f"{where}: paths must be absolute, got {host!r} -> {inside!r}")
        mode = v.get("mode", "RO")
        if mode not in ("RO", "RW"):
            raise AppError(f"{where}.mode: must be RO or RW, got {mode!r}")
        volumes.append(Volume(inside, host, mode))
    return Container(image, network, tuple(mappings), force, tuple(volumes))
