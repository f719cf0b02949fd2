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
class AppSpec:
    id: str
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

    @property
    def version(self) -> str:
        """What makes an instance out of date: a change here means a rolling restart."""
        shape = [self.cpus, self.mem, self.disk, self.gpus, self.ports]
        parts: list[object] = [self.command, sorted(self.env.items()), shape]
        if self.restart_generation:
            parts.append(self.restart_generation)
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
            constraints=cluster,
            tolerations=self.tolerations,
            spread=self.spread,
        )

    @classmethod
    def load(cls, path: str | Path) -> AppSpec:
        try:
            text = Path(path).read_text()
        except OSError as err:
            raise AppError(f"cannot read {path}: {err.strerror or err}") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise AppError(f"{path}: not JSON: {err}") from None
        return cls.from_json(data)

    @classmethod
    def from_json(cls, data: object) -> AppSpec:
        d = _object(data, "the app")
        _known(d, "the app", _APP_KEYS)
        spec = cls(
            id=_name(d.get("id"), "id"),
            command=_text(d.get("command"), "command"),
            instances=_int(d.get("instances", 1), "instances", 0),
            cpus=_num(d.get("cpus", 0.1), "cpus"),
            mem=_num(d.get("mem", 64), "mem"),
            disk=_num(d.get("disk", 0), "disk"),
            gpus=_num(d.get("gpus", 0), "gpus"),
            ports=_int(d.get("ports", 0), "ports", 0),
            port_names=_port_names(d.get("port_names", [])),
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
        }
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
}


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
