"""The cluster's priority classes by name (demands.py rule 5), one of them the global default: the
core's ``priority`` component."""

from __future__ import annotations

from collections.abc import Iterable

from corral.limits import (
    MAX_PRIORITY_CLASSES,
    echo,
)
from corral.priority import DEFAULTS, PriorityClass, PriorityClassError


class PriorityTable:
    """The cluster's priority classes by name, one of them the global default."""

    def __init__(self, classes: Iterable[PriorityClass] = DEFAULTS) -> None:
        self.classes: dict[str, PriorityClass] = {}
        self.default = ""
        # Moves with every set and delete: preempt_wanting.py keeps what it decides by it.
        self.version = 0
        for c in classes:
            self.set(c)

    def set(self, c: PriorityClass) -> None:
        self.version += 1
        old = self.classes.get(c.name)
        if old is not None and old.global_default and not c.global_default:
            raise PriorityClassError(
                f"priority class {echo(c.name)} is the global default; make another class "
                "the global default first"
            )
        if c.name not in self.classes and len(self.classes) >= MAX_PRIORITY_CLASSES:
            raise PriorityClassError(
                f"the cluster has {len(self.classes)} priority classes, the limit"
            )
        if c.global_default and self.default and self.default != c.name:
            previous = self.classes[self.default]
            self.classes[self.default] = _replace_default(previous, False)
        self.classes[c.name] = c
        if c.global_default:
            self.default = c.name

    def delete(self, name: str) -> None:
        self.version += 1
        if name not in self.classes:
            raise KeyError(name)
        if name == self.default:
            raise PriorityClassError(
                f"priority class {echo(name)} is the global default; make another class "
                "the global default first"
            )
        del self.classes[name]

    def resolve(self, name: str) -> PriorityClass:
        """The class ``name`` names; the global default for "" and for a name the table does
        not hold. Never raises: a task's class comes from outside the core (an agent's report,
        a class deleted or forgotten since), and no lookup in the tick may fail on it (rule 5;
        ``known`` tells the two apart where a call must be refused)."""
        c = self.classes.get(name) if name else None
        return c if c is not None else self.classes[self.default]

    def known(self, name: str) -> bool:
        """``name`` is "" (the global default) or a class the table holds."""
        return not name or name in self.classes

    def value(self, name: str) -> int:
        return self.resolve(name).value

    def sorted(self) -> list[PriorityClass]:
        """Highest value first, then by name."""
        return sorted(self.classes.values(), key=lambda c: (-c.value, c.name))


def _replace_default(c: PriorityClass, flag: bool) -> PriorityClass:
    return PriorityClass(c.name, c.value, c.preemption_policy, c.description, flag)
