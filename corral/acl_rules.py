"""The ACL document's rules, parsed and checked (corral/acl.py says what they grant, and
docs/security.md how to write them). Every mistake is an AclError naming the rule and field."""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from corral.placement import TaintEffect, Toleration
from corral.resources import SCALARS, parse_resources

ANY: Final = "*"


class AclError(ValueError):
    """An ACL document Corral cannot use; the message names the rule and field."""


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise AclError(f"{where} must be a list of non-empty strings")
    return tuple(value)


def _flag(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise AclError(f"{where} must be true or false")
    return value


def _paths(value: Any, where: str) -> tuple[str, ...]:
    paths = _strings(value, where)
    for p in paths:
        if p != ANY and not p.startswith("/"):
            raise AclError(f"{where}: {p!r} is not an absolute path (or *)")
    return paths


def _caps(value: Any, where: str, unnamed: float) -> tuple[float, ...] | None:
    """A ``max_resources``: a mapping or a resources string; a resource it does not name is
    capped at ``unnamed`` (a principal's tasks: not capped, ``inf``; an agent's claim: 0, deny
    by default, NodeRestriction). ``.inf`` in a mapping (YAML) is no cap."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - set(SCALARS))
        if unknown:
            raise AclError(
                f"{where}: unknown resource {unknown[0]!r} (one of {', '.join(SCALARS)})"
            )
        caps = []
        for name in SCALARS:
            v = value.get(name, unnamed)
            if isinstance(v, bool) or not isinstance(v, int | float) or not v >= 0:
                raise AclError(f"{where}.{name} must be a number >= 0, got {v!r}")
            caps.append(float(v))
        return tuple(caps)
    if isinstance(value, str):
        try:
            r = parse_resources(value)
        except ValueError as exc:
            raise AclError(f"{where}: {exc}") from None
        named = {part.split(":", 1)[0].strip() for part in value.split(";") if part.strip()}
        return tuple(getattr(r, n) if n in named else unnamed for n in SCALARS)
    raise AclError(f'{where} must be a mapping like {{"gpus": 8}} or a string like "gpus:8"')


@dataclass(frozen=True, slots=True)
class TolerationGrant:
    """A pattern of tolerations a principal may use: ``*``, ``key``, ``key=value`` or
    ``key=value:Effect`` (also ``key:Effect``)."""

    key: str
    value: str | None = None
    effect: TaintEffect | None = None

    @classmethod
    def parse(cls, text: str, where: str) -> TolerationGrant:
        if text == ANY:
            return cls(ANY)
        body, effect = text, None
        if ":" in text:
            body, _, name = text.rpartition(":")
            try:
                effect = TaintEffect(name)
            except ValueError:
                known = ", ".join(e.value for e in TaintEffect)
                raise AclError(f"{where}: {text!r}: effect must be one of {known}") from None
        key, eq, value = body.partition("=")
        if not key:
            raise AclError(f"{where}: {text!r} names no taint key")
        return cls(key, value if eq else None, effect)

    def covers(self, t: Toleration) -> bool:
        if self.key == ANY:
            return True
        if not t.key or t.key != self.key:
            return False  # an empty key with EXISTS tolerates every taint: only "*" grants it
        if self.value is not None and (t.exists or t.value != self.value):
            return False
        return not (self.effect is not None and t.effect is not self.effect)


@dataclass(frozen=True, slots=True)
class FrameworkGrant:
    roles: tuple[str, ...] = ()
    priority_classes: tuple[str, ...] = ()
    tolerations: tuple[TolerationGrant, ...] = ()
    caps: tuple[float, ...] | None = None
    # Containers (docs/containers.md): the images its tasks may run (globs), whether they may
    # use the host's network, the host paths they may mount (a path grants what is under it).
    images: tuple[str, ...] = ()
    host_network: bool = False
    host_paths: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class AgentGrant:
    attributes: tuple[tuple[str, tuple[str, ...]], ...] = ()
    reservations: tuple[str, ...] = ()
    caps: tuple[float, ...] | None = None
    # The hostnames its agents may register with (globs; ``{principal}`` stands for the
    # certificate's name): None, any (a rule that pins none).
    hostnames: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    principals: tuple[str, ...] = ()
    cert_roles: tuple[str, ...] = ()
    frameworks: FrameworkGrant | None = None
    agents: AgentGrant | None = None
    operator: tuple[str, ...] = ()
    # The job service's queues (docs/jobs.md) the principal may submit jobs to.
    job_queues: tuple[str, ...] = ()
    # Principals (globs; "*" every one, and the objects of no one) whose objects in Corral's
    # services (serving apps, jobs) this rule's principals may read and change: a team naming
    # its members, operators "*".
    act_for: tuple[str, ...] = ()
    # Principals (globs) a service of this rule may launch for (FrameworkInfo.on_behalf_of):
    # the master then authorizes the framework with the owner's grants (Kubernetes'
    # impersonate). Grant it to services only.
    launch_for: tuple[str, ...] = ()

    def grants_cert_role(self, role: str) -> bool:
        """Whether the rule may grant a certificate of ``role`` what that kind of client does
        (frameworks: register frameworks; agents: register; operators: call endpoints)."""
        if self.cert_roles and role not in self.cert_roles:
            return False
        if role == "framework":
            return self.frameworks is not None
        if role == "agent":
            return self.agents is not None
        return bool(self.operator)

    def matches(self, name: str, roles: frozenset[str]) -> bool:
        """Whether the rule is for a principal of this name and certificate roles."""
        if not name:
            return False
        if self.principals and not any(fnmatch.fnmatchcase(name, g) for g in self.principals):
            return False
        return not self.cert_roles or bool(roles.intersection(self.cert_roles))


_RULE_KEYS = {
    "name",
    "principals",
    "cert_roles",
    "frameworks",
    "agents",
    "operator",
    "act_for",
    "launch_for",
    "jobs",
}
# The certificate roles `corral certs issue --role` makes (corral.pki.ROLES).
CERT_ROLES = ("framework", "agent", "operator")
_JOBS_KEYS = {"queues"}
_FRAMEWORK_KEYS = {
    "roles",
    "priority_classes",
    "tolerations",
    "max_resources",
    "images",
    "host_network",
    "host_paths",
}
_AGENT_KEYS = {"attributes", "reservations", "max_resources", "hostnames"}
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")


def _section(data: Any, keys: set[str], where: str) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise AclError(f"{where} must be a mapping")
    unknown = sorted(set(data) - keys)
    if unknown:
        raise AclError(f"{where}: unknown field {unknown[0]!r} (fields: {', '.join(sorted(keys))})")
    return data


def parse_rule(data: Any, i: int) -> Rule:
    where = f"rules[{i}]"
    data = _section(data, _RULE_KEYS, where)
    name = data.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise AclError(f"{where}.name must be a name (letters, digits, . _ -), got {name!r}")
    where = f"rule {name!r}"
    principals = _strings(data.get("principals", []), f"{where}.principals")
    cert_roles = _strings(data.get("cert_roles", []), f"{where}.cert_roles")
    if not principals and not cert_roles:
        raise AclError(f"{where} names no principals and no cert_roles: it would grant nobody")
    frameworks = None
    if "frameworks" in data:
        f = _section(data["frameworks"], _FRAMEWORK_KEYS, f"{where}.frameworks")
        frameworks = FrameworkGrant(
            roles=_strings(f.get("roles", []), f"{where}.frameworks.roles"),
            priority_classes=_strings(
                f.get("priority_classes", []), f"{where}.frameworks.priority_classes"
            ),
            tolerations=tuple(
                TolerationGrant.parse(t, f"{where}.frameworks.tolerations")
                for t in _strings(f.get("tolerations", []), f"{where}.frameworks.tolerations")
            ),
            caps=_caps(f.get("max_resources"), f"{where}.frameworks.max_resources", math.inf),
            images=_strings(f.get("images", []), f"{where}.frameworks.images"),
            host_network=_flag(f.get("host_network", False), f"{where}.frameworks.host_network"),
            host_paths=_paths(f.get("host_paths", []), f"{where}.frameworks.host_paths"),
        )
    agents = None
    if "agents" in data:
        a = _section(data["agents"], _AGENT_KEYS, f"{where}.agents")
        attrs = a.get("attributes", {})
        if not isinstance(attrs, Mapping):
            raise AclError(f"{where}.agents.attributes must map attribute names to values")
        agents = AgentGrant(
            attributes=tuple(
                (str(k), _strings(v, f"{where}.agents.attributes.{k}")) for k, v in attrs.items()
            ),
            reservations=_strings(a.get("reservations", []), f"{where}.agents.reservations"),
            hostnames=(
                _strings(a["hostnames"], f"{where}.agents.hostnames") if "hostnames" in a else None
            ),
            # NodeRestriction denies by default: an agent may claim none of a resource its
            # cap does not name (a general node claiming gpus: 1000 is refused).
            caps=_caps(a.get("max_resources"), f"{where}.agents.max_resources", 0.0),
        )
    job_queues: tuple[str, ...] = ()
    if "jobs" in data:
        j = _section(data["jobs"], _JOBS_KEYS, f"{where}.jobs")
        job_queues = _strings(j.get("queues", []), f"{where}.jobs.queues")
    return Rule(
        name=name,
        principals=principals,
        cert_roles=cert_roles,
        frameworks=frameworks,
        agents=agents,
        operator=_strings(data.get("operator", []), f"{where}.operator"),
        job_queues=job_queues,
        act_for=_strings(data.get("act_for", []), f"{where}.act_for"),
        launch_for=_strings(data.get("launch_for", []), f"{where}.launch_for"),
    )
