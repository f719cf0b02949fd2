"""Priority classes: the operator's vocabulary for "who goes first", checked and parsed in one
place (the core runs the checks on every call; the master's flag and the HTTP shell parse JSON
with the same functions).

A **priority class** is a cluster object: a name, a value (an int; higher goes first), a
``preemption_policy`` (``PreemptLowerPriority``, or ``Never``: work of this class never
preempts, it only waits) and a description. Exactly one class is the **global default**: the
class of every task and demand that names none.

The master starts with ``DEFAULTS`` (below); ``--priority-classes FILE`` and the Operator API
set classes over them by name (a class set again is replaced). The values follow Kubernetes'
conventions: user classes within +-1e9, ``system`` above them.

Every check raises ``PriorityClassError`` (a ValueError) naming the problem.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from corral.limits import (
    MAX_NAME_LENGTH,
    MAX_PRIORITY_CLASSES,
    MAX_VALUE_LENGTH,
    echo,
)

# Values are bounded so that any class fits the wire's int64 and the allocator's order key.
MAX_PRIORITY = 2_000_000_000


class PriorityClassError(ValueError):
    """A priority class that cannot be applied; the message names the problem."""


class PreemptionPolicy(StrEnum):
    PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
    NEVER = "Never"


@dataclass(frozen=True, slots=True)
class PriorityClass:
    name: str
    value: int
    preemption_policy: PreemptionPolicy = PreemptionPolicy.PREEMPT_LOWER_PRIORITY
    description: str = ""
    global_default: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "value": self.value,
            "preemption_policy": self.preemption_policy.value,
            "description": self.description,
            "global_default": self.global_default,
        }


DEFAULT_CLASS = "default"

DEFAULTS: tuple[PriorityClass, ...] = (
    PriorityClass("system", MAX_PRIORITY, description="the cluster's own services"),
    PriorityClass("serving", 1000, description="latency-sensitive services"),
    PriorityClass(
        DEFAULT_CLASS, 0, description="tasks and demands that name no class", global_default=True
    ),
    PriorityClass(
        "batch",
        -100,
        PreemptionPolicy.NEVER,
        description="batch work: offered what is left, never preempts",
    ),
)


def check_name(name: object) -> str:
    if not isinstance(name, str):
        raise PriorityClassError(f"a priority class name must be a string, got {echo(name)}")
    if not name:
        raise PriorityClassError("the priority class name is empty")
    if len(name) > MAX_NAME_LENGTH:
        raise PriorityClassError(
            f"priority class {echo(name)} is {len(name)} characters, "
            f"more than the limit of {MAX_NAME_LENGTH}"
        )
    bad = [c for c in name if c.isspace() or not c.isprintable() or c in ",="]
    if bad:
        raise PriorityClassError(f"priority class {echo(name)} contains {echo(bad[0])}")
    return name


def check_class(
    name: object,
    value: object,
    preemption_policy: object = PreemptionPolicy.PREEMPT_LOWER_PRIORITY.value,
    description: object = "",
    global_default: object = False,
) -> PriorityClass:
    """A PriorityClass from loose values (JSON, the wire), or PriorityClassError."""
    n = check_name(name)
    if isinstance(value, bool) or not isinstance(value, int):
        raise PriorityClassError(
            f"the value of priority class {echo(n)} must be an integer, got {echo(value)}"
        )
    if not -MAX_PRIORITY <= value <= MAX_PRIORITY:
        raise PriorityClassError(
            f"the value of priority class {echo(n)} must be within +-{MAX_PRIORITY}, got {value}"
        )
    try:
        policy = PreemptionPolicy(str(preemption_policy or PreemptionPolicy.PREEMPT_LOWER_PRIORITY))
    except ValueError:
        known = ", ".join(p.value for p in PreemptionPolicy)
        raise PriorityClassError(
            f"priority class {echo(n)}: unknown preemption_policy {echo(preemption_policy)} "
            f"(known: {known})"
        ) from None
    if not isinstance(description, str):
        raise PriorityClassError(
            f"the description of priority class {echo(n)} must be a string, got {echo(description)}"
        )
    if len(description) > MAX_VALUE_LENGTH:
        raise PriorityClassError(
            f"the description of priority class {echo(n)} is {len(description)} characters, "
            f"more than the limit of {MAX_VALUE_LENGTH}"
        )
    if not isinstance(global_default, bool):
        raise PriorityClassError(
            f"global_default of priority class {echo(n)} must be true or false, "
            f"got {echo(global_default)}"
        )
    return PriorityClass(n, value, policy, description, global_default)


_FIELDS = frozenset({"name", "value", "preemption_policy", "description", "global_default"})


def class_from_json(item: object) -> PriorityClass:
    if not isinstance(item, Mapping):
        raise PriorityClassError(f"a priority class must be a JSON object, got {echo(item)}")
    unknown = sorted(set(item) - _FIELDS)
    if unknown:
        raise PriorityClassError(
            f"unknown field {echo(unknown[0])} in priority class {echo(item.get('name'))} "
            f"(known: {', '.join(sorted(_FIELDS))})"
        )
    if "name" not in item or "value" not in item:
        raise PriorityClassError(
            f"priority class {echo(item.get('name'))} needs a name and a value"
        )
    return check_class(
        item["name"],
        item["value"],
        item.get("preemption_policy", PreemptionPolicy.PREEMPT_LOWER_PRIORITY.value),
        item.get("description", ""),
        item.get("global_default", False),
    )


def classes_from_json(data: object) -> tuple[PriorityClass, ...]:
    """The classes of a ``--priority-classes`` file as parsed (the CLI reads it with
    ``corral.frameworks.sdk.json_input``): a JSON list of objects with the fields of
    ``PriorityClass.to_json`` (name and value required), at most one the global default."""
    if not isinstance(data, list):
        raise PriorityClassError("the priority classes must be a JSON list of objects")
    if len(data) > MAX_PRIORITY_CLASSES:
        raise PriorityClassError(
            f"{len(data)} priority classes, more than the limit of {MAX_PRIORITY_CLASSES}"
        )
    classes = tuple(class_from_json(item) for item in data)
    check_unique(classes)
    return classes


def check_unique(classes: Iterable[PriorityClass]) -> None:
    seen: set[str] = set()
    defaults = []
    for c in classes:
        if c.name in seen:
            raise PriorityClassError(f"priority class {echo(c.name)} appears twice")
        seen.add(c.name)
        if c.global_default:
            defaults.append(c.name)
    if len(defaults) > 1:
        raise PriorityClassError(
            f"priority classes {', '.join(map(echo, defaults))} are each marked the global "
            "default; at most one may be"
        )
