"""Placement vocabulary shared by the master, its allocator and the SDK: attributes, taints,
tolerations and attribute constraints, with their command-line forms and their pure match rules.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum

from corral.pairs import items


class TaintEffect(Enum):
    NO_SCHEDULE = "NoSchedule"
    PREFER_NO_SCHEDULE = "PreferNoSchedule"
    NO_EXECUTE = "NoExecute"


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: TaintEffect

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect.value}"


@dataclass(frozen=True, slots=True)
class Toleration:
    """Tolerates taints with ``key`` (and ``value`` unless ``exists``); effect None = any."""

    key: str
    value: str = ""
    exists: bool = False
    effect: TaintEffect | None = None

    def tolerates(self, taint: Taint) -> bool:
        if self.key != taint.key:
            return False
        if self.effect is not None and self.effect is not taint.effect:
            return False
        return self.exists or self.value == taint.value

    def __str__(self) -> str:
        text = f"{self.key} exists" if self.exists else f"{self.key}={self.value}"
        return text if self.effect is None else f"{text}:{self.effect.value}"


def untolerated(taints: Iterable[Taint], tolerations: Iterable[Toleration]) -> list[Taint]:
    tols = list(tolerations)
    return [t for t in taints if not any(tol.tolerates(t) for tol in tols)]


class ConstraintOp(Enum):
    EQUALS = "equals"
    IN = "in"
    EXISTS = "exists"


@dataclass(frozen=True, slots=True)
class AttributeConstraint:
    attribute: str
    op: ConstraintOp
    values: tuple[str, ...] = field(default=())

    def matches(self, attributes: Mapping[str, str]) -> bool:
        if self.attribute not in attributes:
            return False
        if self.op is ConstraintOp.EXISTS:
            return True
        value = attributes[self.attribute]
        if self.op is ConstraintOp.EQUALS:
            return bool(self.values) and value == self.values[0]
        return value in self.values

    def __str__(self) -> str:
        if self.op is ConstraintOp.EXISTS:
            return f"{self.attribute} exists"
        if self.op is ConstraintOp.EQUALS:
            return f"{self.attribute}={self.values[0] if self.values else ''}"
        return f"{self.attribute} in ({','.join(self.values)})"


_KEY = re.compile(r"^[A-Za-z0-9_.\-/]+$")


def parse_attributes(text: str) -> dict[str, str]:
    """Parse ``'zone:a;rack:r1'``."""
    out: dict[str, str] = {}
    for key, value, part in items(text, ";", ":"):
        if value is None or not key or not _KEY.match(key):
            raise ValueError(f"attribute {part!r} must look like name:value")
        out[key] = value
    return out


def parse_taint(text: str) -> Taint:
    """Parse ``'spot=true:NoSchedule'``."""
    body, sep, effect = text.strip().rpartition(":")
    if not sep:
        raise ValueError(f"taint {text!r} must look like key=value:Effect")
    key, _, value = body.partition("=")
    if not key or not _KEY.match(key):
        raise ValueError(f"taint {text!r} has an invalid key")
    try:
        eff = TaintEffect(effect)
    except ValueError:
        known = ", ".join(e.value for e in TaintEffect)
        raise ValueError(f"taint {text!r}: effect must be one of {known}") from None
    return Taint(key, value, eff)


def parse_taints(text: str) -> list[Taint]:
    return [parse_taint(p) for p in re.split(r"[;,]", text) if p.strip()]


HOSTNAME_KEY = "hostname"  # a topology key every agent has: its hostname


@dataclass(frozen=True, slots=True)
class TopologySpread:
    """Kubernetes' topology spread constraint for one demand's live tasks: over the values of
    agent attribute ``topology_key``, placing one more task in value ``v`` is allowed while
    ``count(v) + 1 - min(count over the domains) <= max_skew``. The domains are the values of
    the agents that pass the demand's constraints (Kubernetes' nodeAffinityPolicy Honor,
    nodeTaintsPolicy Ignore), a domain with no task counting 0. An agent without the key is
    not a domain. ``schedule_anyway``: a preference, never a reason to stay pending."""

    topology_key: str
    max_skew: int = 1
    schedule_anyway: bool = False

    def value_of(self, hostname: str, attributes: Mapping[str, str]) -> str | None:
        """The agent's domain; None if it has none (no such attribute)."""
        found = attributes.get(self.topology_key)
        if found is None and self.topology_key == HOSTNAME_KEY:
            return hostname
        return found

    def blocked(self, value: str | None, counts: Mapping[str, int], fewest: int) -> str:
        """Why one more task may not go to domain ``value`` (empty: it may). ``fewest``: the
        smallest count over the domains."""
        if self.schedule_anyway:
            return ""
        if value is None:
            return f"spread: no attribute {self.topology_key}"
        if counts.get(value, 0) + 1 - fewest > self.max_skew:
            return f"spread: {self.topology_key}={value} would exceed max_skew {self.max_skew}"
        return ""

    def __str__(self) -> str:
        how = "ScheduleAnyway" if self.schedule_anyway else "DoNotSchedule"
        return f"max_skew {self.max_skew} over {self.topology_key} ({how})"
