"""Placement helpers shared by frameworks: typed constraints and tolerations (the wire's
AttributeConstraint and Toleration without touching protobuf), topology spread with
``max_skew`` (Kubernetes' rule), Marathon's attribute constraints (UNIQUE, MAX_PER, CLUSTER,
GROUP_BY, LIKE, UNLIKE), and binpack / spread orderings of offers.

Everything here is pure: a framework tells it where its live tasks are (the ``where`` map of
each: the agent's attributes plus ``hostname``) and what it was offered, and gets back which
offers may take one more task, best first. ``Placer`` does that for many tasks over one batch of
offers, counting each task it places before placing the next.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from corral.frameworks.sdk.offers import EPSILON, OfferPacker, fits
from corral.v1.common_pb2 import (
    AttributeConstraint,
    ConstraintOperator,
    Offer,
    Resources,
    TaintEffect,
    TaskInfo,
    TolerationOperator,
    TopologySpread,
    WhenUnsatisfiable,
)
from corral.v1.common_pb2 import Taint as TaintPb
from corral.v1.common_pb2 import Toleration as TolerationPb

HOSTNAME = "hostname"  # the topology key / constraint field that means the agent's hostname

Effect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
_EFFECTS: dict[str, TaintEffect] = {
    "NoSchedule": TaintEffect.TAINT_EFFECT_NO_SCHEDULE,
    "PreferNoSchedule": TaintEffect.TAINT_EFFECT_PREFER_NO_SCHEDULE,
    "NoExecute": TaintEffect.TAINT_EFFECT_NO_EXECUTE,
}


def where(offer: Offer) -> dict[str, str]:
    """The offer's agent as placement rules see it: its attributes plus ``hostname``."""
    return {**offer.attributes, HOSTNAME: offer.hostname}


# -- constraints and tolerations (the wire's, typed) ---------------------------------------


@dataclass(frozen=True, slots=True)
class Constraint:
    """An attribute constraint on agents: ``Constraint.equals("zone", "a")``,
    ``Constraint.one_of("zone", "a", "b")``, ``Constraint.exists("gpu")``. ``to_pb()`` is the
    wire's AttributeConstraint (for ``Demand`` and ``FrameworkInfo.offer_constraints``);
    ``matches(attributes)`` is the master's rule."""

    attribute: str
    op: Literal["equals", "in", "exists"]
    values: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.attribute:
            raise ValueError("a constraint needs an attribute")
        if self.op not in ("equals", "in", "exists"):
            raise ValueError(f"constraint op must be equals, in or exists, got {self.op!r}")
        if self.op != "exists" and not self.values:
            raise ValueError(f"constraint on {self.attribute!r}: {self.op} needs a value")

    @classmethod
    def equals(cls, attribute: str, value: str) -> Constraint:
        return cls(attribute, "equals", (value,))

    @classmethod
    def one_of(cls, attribute: str, *values: str) -> Constraint:
        return cls(attribute, "in", tuple(values))

    @classmethod
    def exists(cls, attribute: str) -> Constraint:
        return cls(attribute, "exists")

    @classmethod
    def parse(cls, text: str) -> Constraint:
        """A constraint as written on a command line or in a job file: ``zone=a`` (equals),
        ``zone=a,b`` (one of), ``gpu-sku`` (the attribute exists). ``ValueError`` names what
        is wrong."""
        attribute, eq, values = text.strip().partition("=")
        attribute = attribute.strip()
        if not attribute:
            raise ValueError(f"constraint {text!r}: write ATTRIBUTE=VALUE[,VALUE...] or ATTRIBUTE")
        if not eq:
            return cls.exists(attribute)
        vals = tuple(v.strip() for v in values.split(","))
        if not all(vals):
            raise ValueError(f"constraint {text!r}: an empty value")
        return cls.equals(attribute, vals[0]) if len(vals) == 1 else cls.one_of(attribute, *vals)

    def __str__(self) -> str:
        return (
            self.attribute if self.op == "exists" else f"{self.attribute}={','.join(self.values)}"
        )

    def matches(self, attributes: Mapping[str, str]) -> bool:
        if self.attribute not in attributes:
            return False
        if self.op == "exists":
            return True
        return attributes[self.attribute] in self.values[: 1 if self.op == "equals" else None]

    def to_pb(self) -> AttributeConstraint:
        op = {
            "equals": ConstraintOperator.CONSTRAINT_OPERATOR_EQUALS,
            "in": ConstraintOperator.CONSTRAINT_OPERATOR_IN,
            "exists": ConstraintOperator.CONSTRAINT_OPERATOR_EXISTS,
        }[self.op]
        return AttributeConstraint(attribute=self.attribute, operator=op, values=self.values)


@dataclass(frozen=True, slots=True)
class Toleration:
    """Tolerates taints with ``key`` (and ``value``, unless made with ``exists``) of
    ``effect`` (None: every effect): ``Toleration.equal("spot", "true", "NoSchedule")``,
    ``Toleration.exists("spot")``. ``to_pb()`` is the wire's Toleration."""

    key: str
    value: str = ""
    any_value: bool = False
    effect: Effect | None = None

    def __post_init__(self) -> None:
        if not self.key:
            raise ValueError("a toleration needs a key")
        if self.effect is not None and self.effect not in _EFFECTS:
            raise ValueError(
                f"toleration of {self.key!r}: effect must be one of {', '.join(_EFFECTS)}, "
                f"got {self.effect!r}"
            )

    @classmethod
    def equal(cls, key: str, value: str, effect: Effect | None = None) -> Toleration:
        return cls(key, value, False, effect)

    @classmethod
    def exists(cls, key: str, effect: Effect | None = None) -> Toleration:
        return cls(key, "", True, effect)

    @classmethod
    def parse(cls, text: str) -> Toleration:
        """A toleration as written on a command line or in a job or app file, in the taint's
        own spelling (``corral agent --taints``): ``gpu-sku=inference:NoSchedule`` tolerates
        that taint, ``gpu-sku=inference`` it with any effect, ``spot:NoSchedule`` key ``spot``
        with any value, ``spot`` every taint of key ``spot``. ``ValueError`` names what is
        wrong."""
        body, colon, effect = text.strip().rpartition(":")
        if not colon:
            body, effect = effect, ""
        key, eq, value = body.partition("=")
        key, value, effect = key.strip(), value.strip(), effect.strip()
        if effect and effect not in _EFFECTS:
            raise ValueError(
                f"toleration {text!r}: the effect must be one of {', '.join(_EFFECTS)}, "
                f"got {effect!r}"
            )
        if not key:
            raise ValueError(f"toleration {text!r}: write KEY[=VALUE][:EFFECT]")
        return cls(key, value, not eq, effect or None)  # type: ignore[arg-type]

    def __str__(self) -> str:
        value = "" if self.any_value else f"={self.value}"
        return f"{self.key}{value}{':' + self.effect if self.effect else ''}"

    def tolerates(self, taint: TaintPb) -> bool:
        if taint.key != self.key:
            return False
        if self.effect is not None and _EFFECTS[self.effect] != taint.effect:
            return False
        return self.any_value or taint.value == self.value

    def to_pb(self) -> TolerationPb:
        return TolerationPb(
            key=self.key,
            operator=TolerationOperator.TOLERATION_OPERATOR_EXISTS
            if self.any_value
            else TolerationOperator.TOLERATION_OPERATOR_EQUAL,
            value=self.value,
            effect=_EFFECTS[self.effect] if self.effect else TaintEffect.TAINT_EFFECT_UNSPECIFIED,
        )


# -- topology spread ------------------------------------------------------------------------

When = Literal["DoNotSchedule", "ScheduleAnyway"]


@dataclass(frozen=True, slots=True)
class Spread:
    """Kubernetes' topology spread: over the values of ``topology_key`` (an agent attribute,
    or ``"hostname"``) the live tasks of one demand may differ from the emptiest value by at
    most ``max_skew``. ``DoNotSchedule`` leaves a task pending rather than break that;
    ``ScheduleAnyway`` prefers the emptiest value and places anyway."""

    topology_key: str
    max_skew: int = 1
    when_unsatisfiable: When = "DoNotSchedule"

    def __post_init__(self) -> None:
        if not self.topology_key:
            raise ValueError("a spread needs a topology_key")
        if isinstance(self.max_skew, bool) or not isinstance(self.max_skew, int):
            raise ValueError(f"max_skew must be an int >= 1, got {self.max_skew!r}")
        if self.max_skew < 1:
            raise ValueError(f"max_skew must be an int >= 1, got {self.max_skew!r}")
        if self.when_unsatisfiable not in ("DoNotSchedule", "ScheduleAnyway"):
            raise ValueError(
                "when_unsatisfiable must be DoNotSchedule or ScheduleAnyway, "
                f"got {self.when_unsatisfiable!r}"
            )

    def to_pb(self) -> TopologySpread:
        when = (
            WhenUnsatisfiable.WHEN_UNSATISFIABLE_SCHEDULE_ANYWAY
            if self.when_unsatisfiable == "ScheduleAnyway"
            else WhenUnsatisfiable.WHEN_UNSATISFIABLE_DO_NOT_SCHEDULE
        )
        return TopologySpread(
            topology_key=self.topology_key, max_skew=self.max_skew, when_unsatisfiable=when
        )


def spread_candidates(
    spread: Spread,
    counts: Mapping[str, int],
    offers: Sequence[Offer],
    known: Iterable[str] = (),
) -> list[int]:
    """Indexes of the offers that may take one more task, the emptiest value first (ties in
    offer order).

    ``counts`` is the demand's live tasks per topology value. The values the skew is measured
    over are those of ``counts``, ``known`` (values the framework has seen before, say in
    earlier offers: they count even while none of their agents is offered, or a zone whose
    agents are busy would not hold the others back) and the offers'. A value with no task
    counts 0. An offer whose agent lacks the key is never a candidate under DoNotSchedule (as
    Kubernetes skips such nodes) and the last choice under ScheduleAnyway.
    """
    values = [where(o).get(spread.topology_key) for o in offers]
    domains = set(counts) | set(known) | {v for v in values if v is not None}
    low = min((counts.get(d, 0) for d in domains), default=0)
    ranked: list[tuple[int, int, int]] = []  # (missing key, count, index)
    for i, v in enumerate(values):
        if v is None:
            if spread.when_unsatisfiable == "ScheduleAnyway":
                ranked.append((1, 0, i))
            continue
        n = counts.get(v, 0)
        if spread.when_unsatisfiable == "DoNotSchedule" and n + 1 - low > spread.max_skew:
            continue
        ranked.append((0, n, i))
    return [i for *_, i in sorted(ranked)]


# -- Marathon's constraints -----------------------------------------------------------------

MarathonOp = Literal["UNIQUE", "MAX_PER", "CLUSTER", "GROUP_BY", "LIKE", "UNLIKE"]
_MARATHON_OPS = ("UNIQUE", "MAX_PER", "CLUSTER", "GROUP_BY", "LIKE", "UNLIKE")


@dataclass(frozen=True, slots=True)
class Rule:
    """A Marathon constraint ``[field, operator, value]`` on the agent attribute ``field``
    (``"hostname"``: the agent's hostname), judged against where the app's live tasks are:

    - ``UNIQUE``: no two tasks on the same value;
    - ``MAX_PER n``: at most n tasks per value;
    - ``CLUSTER v``: only on value v (no v: on the value the first task got);
    - ``GROUP_BY [n]``: evenly over the values: a value may take a task while it has no more
      than the least-used one (n: how many values to expect, so unseen ones count as empty);
    - ``LIKE re`` / ``UNLIKE re``: the value does / does not fully match the regex.

    An agent without the attribute is refused by every operator but UNLIKE."""

    field: str
    operator: MarathonOp
    value: str = ""
    _regex: re.Pattern[str] | None = dataclasses.field(
        default=None, init=False, compare=False, repr=False
    )

    def __post_init__(self) -> None:
        if not self.field:
            raise ValueError("a constraint needs a field")
        if self.operator not in _MARATHON_OPS:
            raise ValueError(
                f"constraint on {self.field!r}: operator must be one of "
                f"{', '.join(_MARATHON_OPS)}, got {self.operator!r}"
            )
        if (
            self.operator in ("MAX_PER", "GROUP_BY")
            and self.value
            and (not self.value.isdigit() or int(self.value) < 1)
        ):
            raise ValueError(
                f"constraint {self.field} {self.operator}: the value must be a whole "
                f"number >= 1, got {self.value!r}"
            )
        if self.operator == "MAX_PER" and not self.value:
            raise ValueError(f"constraint {self.field} MAX_PER needs a number")
        if self.operator in ("LIKE", "UNLIKE"):
            try:
                object.__setattr__(self, "_regex", re.compile(self.value))
            except re.error as err:
                raise ValueError(
                    f"constraint {self.field} {self.operator}: bad regex {self.value!r}: {err}"
                ) from None

    @classmethod
    def parse(cls, parts: Sequence[object]) -> Rule:
        """From Marathon's JSON form: ``["hostname", "UNIQUE"]``, ``["zone", "MAX_PER", "2"]``."""
        if (
            isinstance(parts, str)
            or not 2 <= len(parts) <= 3
            or not all(isinstance(p, str | int) for p in parts)
        ):
            raise ValueError(
                f"a constraint is [field, operator] or [field, operator, value], got {parts!r}"
            )
        field_, op, *rest = (str(p) for p in parts)
        return cls(field_, op.upper(), rest[0] if rest else "")  # type: ignore[arg-type]

    def allows(
        self,
        candidate: Mapping[str, str],
        placed: Sequence[Mapping[str, str]],
        known: Iterable[str] = (),
    ) -> bool:
        """May a task go on an agent seen as ``candidate`` (``where(offer)``), given the
        ``where`` maps of the live tasks? ``known``: values of ``field`` seen elsewhere (for
        GROUP_BY)."""
        value = candidate.get(self.field)
        if self.operator == "UNLIKE":
            return value is None or not (self._regex and self._regex.fullmatch(value))
        if value is None:
            return False
        used = Counter(p[self.field] for p in placed if self.field in p)
        if self.operator == "UNIQUE":
            return used[value] == 0
        if self.operator == "MAX_PER":
            return used[value] < int(self.value)
        if self.operator == "CLUSTER":
            if self.value:
                return value == self.value
            first = next((p[self.field] for p in placed if self.field in p), None)
            return first is None or value == first
        if self.operator == "LIKE":
            return bool(self._regex and self._regex.fullmatch(value))
        # GROUP_BY
        groups = set(used) | set(known) | {value}
        expected = int(self.value) if self.value else 0
        low = 0 if len(groups) < expected else min(used[g] for g in groups)
        return used[value] <= low


# -- orderings ------------------------------------------------------------------------------

_SCALARS = ("cpus", "mem", "disk", "gpus")


def _room(thing: Offer | Resources) -> Resources:
    return thing if isinstance(thing, Resources) else thing.resources


def _copies(room: Resources, shape: Resources) -> float:
    counts = [
        (getattr(room, n) + EPSILON) / getattr(shape, n)
        for n in _SCALARS
        if getattr(shape, n) > EPSILON
    ]
    return math.floor(min(counts)) if counts else math.inf


def binpack_order(rooms: Sequence[Offer | Resources], shape: TaskInfo | Resources) -> list[int]:
    """Indexes of the rooms one task of ``shape`` fits in, fullest first (room for the fewest
    copies, then the least cpus, then the least mem): busy agents fill up, empty ones stay
    whole for work that needs a whole agent."""
    want = _room(shape) if isinstance(shape, Resources) else shape.resources
    keyed = [
        (_copies(_room(r), want), _room(r).cpus, _room(r).mem, i)
        for i, r in enumerate(rooms)
        if fits(_room(r), want)
    ]
    return [i for *_, i in sorted(keyed)]


def spread_order(rooms: Sequence[Offer | Resources], shape: TaskInfo | Resources) -> list[int]:
    """Indexes of the rooms one task of ``shape`` fits in, emptiest first (room for the most
    copies, then the most cpus, then the most mem): load spreads over agents."""
    want = _room(shape) if isinstance(shape, Resources) else shape.resources
    keyed = [
        (-_copies(_room(r), want), -_room(r).cpus, -_room(r).mem, i)
        for i, r in enumerate(rooms)
        if fits(_room(r), want)
    ]
    return [i for *_, i in sorted(keyed)]


# -- placing many tasks over one batch of offers --------------------------------------------


class Placer:
    """Places tasks one at a time over a batch of offers, obeying wire ``constraints``,
    Marathon ``rules`` and a ``spread``, ordered ``"spread"`` (emptiest agent first) or
    ``"binpack"`` (fullest first) among equally good offers. Each placed task counts toward
    the rules of the next::

        placer = sdk.Placer(offers, placed=[i.where for i in live], spread=sdk.Spread("zone"))
        for t in wanted:
            if placer.place(t, ports=1) is None:
                break  # nothing here may take it: it stays pending
        for offer, tasks in placer.launches():
            await driver.launch([offer], tasks)
        await driver.decline(placer.unused())

    ``placed`` are the ``where`` maps of the live tasks the rules count; ``known`` maps a key
    to its values seen before (``spread_candidates``), for the spread and GROUP_BY."""

    def __init__(
        self,
        offers: Sequence[Offer],
        *,
        placed: Sequence[Mapping[str, str]] = (),
        constraints: Sequence[Constraint] = (),
        rules: Sequence[Rule] = (),
        spread: Spread | None = None,
        order: Literal["spread", "binpack"] = "spread",
        known: Mapping[str, Iterable[str]] | None = None,
    ) -> None:
        if order not in ("spread", "binpack"):
            raise ValueError(f"order must be spread or binpack, got {order!r}")
        self.offers = list(offers)
        self.placed = [dict(p) for p in placed]
        self.constraints = tuple(constraints)
        self.rules = tuple(rules)
        self.spread = spread
        self.order = order
        self.known = {k: set(v) for k, v in (known or {}).items()}
        self._packers = [OfferPacker(o) for o in self.offers]
        self._where = [where(o) for o in self.offers]

    def place(self, task: TaskInfo, ports: int = 0) -> Offer | None:
        """Put ``task`` on the best offer that may take it (with ``ports`` free ports assigned,
        see ``OfferPacker.add``) and return that offer; None (and nothing changes) if none may."""
        ok = [
            i
            for i, w in enumerate(self._where)
            if all(c.matches(w) for c in self.constraints)
            and all(r.allows(w, self.placed, self._known(r.field)) for r in self.rules)
        ]
        rooms = [self._packers[i].remaining for i in ok]
        ranked = [
            ok[j] for j in (binpack_order if self.order == "binpack" else spread_order)(rooms, task)
        ]
        if self.spread is not None:
            key = self.spread.topology_key
            counts = Counter(p[key] for p in self.placed if key in p)
            picks = spread_candidates(
                self.spread, counts, [self.offers[i] for i in ranked], self._known(key)
            )
            ranked = [ranked[j] for j in picks]  # stable: the order above breaks ties
        for i in ranked:
            if self._packers[i].add(task, ports):
                self.placed.append(self._where[i])
                return self.offers[i]
        return None

    def _known(self, key: str) -> set[str]:
        return self.known.get(key, set()) | {w[key] for w in self._where if key in w}

    def launches(self) -> list[tuple[Offer, list[TaskInfo]]]:
        """Each offer that got tasks, with them."""
        return [(o, p.tasks) for o, p in zip(self.offers, self._packers, strict=True) if p.tasks]

    def unused(self) -> list[Offer]:
        """The offers that got no task (to decline)."""
        return [o for o, p in zip(self.offers, self._packers, strict=True) if not p.tasks]
