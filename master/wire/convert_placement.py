"""Wire messages <-> core values for placement and policy: taints, tolerations, attribute
constraints, topology spread, demands, priority classes and roles' quotas."""

from __future__ import annotations

import math
from collections.abc import Sequence

from corral import limits
from corral.master.core.types import (
    Demand,
)
from corral.master.wire.convert_checks import (
    WireError,
    count,
    name,
    resources_from_pb,
    resources_to_pb,
    scalars_to_pb,
    text,
)
from corral.placement import (
    AttributeConstraint,
    ConstraintOp,
    Taint,
    TaintEffect,
    Toleration,
    TopologySpread,
)
from corral.priority import PriorityClass, PriorityClassError, check_class
from corral.resources import SCALARS
from corral.roles import Quota
from corral.v1 import common_pb2 as pb
from corral.v1 import operator_pb2 as op

_EFFECT_FROM_PB = {
    pb.TAINT_EFFECT_NO_SCHEDULE: TaintEffect.NO_SCHEDULE,
    pb.TAINT_EFFECT_PREFER_NO_SCHEDULE: TaintEffect.PREFER_NO_SCHEDULE,
    pb.TAINT_EFFECT_NO_EXECUTE: TaintEffect.NO_EXECUTE,
}


_EFFECT_TO_PB = {v: k for k, v in _EFFECT_FROM_PB.items()}


_OP_FROM_PB = {
    pb.CONSTRAINT_OPERATOR_EQUALS: ConstraintOp.EQUALS,
    pb.CONSTRAINT_OPERATOR_IN: ConstraintOp.IN,
    pb.CONSTRAINT_OPERATOR_EXISTS: ConstraintOp.EXISTS,
}


_OP_TO_PB = {v: k for k, v in _OP_FROM_PB.items()}


_WHEN_UNSATISFIABLE = frozenset(pb.WhenUnsatisfiable.values())


def taints_from_pb(taints: Sequence[pb.Taint], what: str) -> tuple[Taint, ...]:
    count(taints, f"{what}: taints", limits.MAX_TAINTS)
    out: list[Taint] = []
    for t in taints:
        name(t.key, f"{what}: a taint's key")
        text(t.value, f"{what}: taint {limits.echo(t.key)}'s value", limits.MAX_VALUE_LENGTH)
        effect = _EFFECT_FROM_PB.get(t.effect)
        if effect is None:
            raise WireError(f"{what}: taint {t.key!r} has no effect")
        out.append(Taint(t.key, t.value, effect))
    return tuple(out)


def tolerations_from_pb(tolerations: Sequence[pb.Toleration], where: str) -> tuple[Toleration, ...]:
    count(tolerations, f"{where}: tolerations", limits.MAX_TOLERATIONS)
    for t in tolerations:
        name(t.key, f"{where}: a toleration's key")
        text(t.value, f"{where}: a toleration's value", limits.MAX_VALUE_LENGTH)
    return tuple(
        Toleration(
            key=t.key,
            value=t.value,
            exists=t.operator == pb.TOLERATION_OPERATOR_EXISTS,
            effect=_EFFECT_FROM_PB.get(t.effect),
        )
        for t in tolerations
    )


def constraints_from_pb(
    constraints: Sequence[pb.AttributeConstraint], where: str, kind: str
) -> tuple[AttributeConstraint, ...]:
    count(constraints, f"{where}: {kind}s", limits.MAX_CONSTRAINTS)
    out: list[AttributeConstraint] = []
    for c in constraints:
        name(c.attribute, f"{where}: an {kind}'s attribute")
        count(c.values, f"{kind} on {limits.echo(c.attribute)}", limits.MAX_ATTRIBUTES)
        for v in c.values:
            text(v, f"an {kind}'s value", limits.MAX_VALUE_LENGTH)
        op = _OP_FROM_PB.get(c.operator)
        if op is None or not c.attribute:
            raise WireError(f"{where}: {kind} on {c.attribute!r} has no operator")
        out.append(AttributeConstraint(c.attribute, op, tuple(c.values)))
    return tuple(out)


def spread_from_pb(s: pb.TopologySpread, where: str) -> TopologySpread | None:
    """None when unset (no topology key); a key without a max_skew of at least 1 is an error."""
    if not s.topology_key:
        if s.max_skew or s.when_unsatisfiable:
            raise WireError(
                f"{where}: spread has a max_skew or when_unsatisfiable but no topology_key"
            )
        return None
    name(s.topology_key, f"{where}: spread's topology_key")
    if s.max_skew < 1:
        raise WireError(f"{where}: spread over {limits.echo(s.topology_key)} needs max_skew >= 1")
    if s.when_unsatisfiable not in _WHEN_UNSATISFIABLE:
        raise WireError(f"{where}: spread has an unknown when_unsatisfiable {s.when_unsatisfiable}")
    return TopologySpread(
        s.topology_key, s.max_skew, s.when_unsatisfiable == pb.WHEN_UNSATISFIABLE_SCHEDULE_ANYWAY
    )


def demand_from_pb(d: pb.Demand) -> Demand:
    """The wire's checks (sizes, quantities); the core checks the rest (counts, classes)."""
    name(d.name, "a demand's name")
    what = f"demand {limits.echo(d.name)}"
    name(d.priority_class, f"{what}: priority_class")
    resources = resources_from_pb(d.resources, what)
    return Demand(
        name=d.name,
        resources=resources,
        count=d.count,
        priority_class=d.priority_class,
        min_member=d.min_member,
        constraints=constraints_from_pb(d.constraints, what, "attribute constraint"),
        tolerations=tolerations_from_pb(d.tolerations, what),
        spread=spread_from_pb(d.spread, what),
    )


def demand_to_pb(d: Demand, out: pb.Demand) -> pb.Demand:
    out.name, out.count, out.priority_class, out.min_member = (
        d.name,
        d.count,
        d.priority_class,
        d.min_member,
    )
    resources_to_pb(d.resources, out.resources)
    for c in d.constraints:
        out.constraints.add(attribute=c.attribute, operator=_OP_TO_PB[c.op], values=list(c.values))
    for t in d.tolerations:
        out.tolerations.add(
            key=t.key,
            value=t.value,
            operator=pb.TOLERATION_OPERATOR_EXISTS if t.exists else pb.TOLERATION_OPERATOR_EQUAL,
            effect=pb.TAINT_EFFECT_UNSPECIFIED if t.effect is None else _EFFECT_TO_PB[t.effect],
        )
    if d.spread is not None:
        out.spread.topology_key, out.spread.max_skew = d.spread.topology_key, d.spread.max_skew
        out.spread.when_unsatisfiable = (
            pb.WHEN_UNSATISFIABLE_SCHEDULE_ANYWAY
            if d.spread.schedule_anyway
            else pb.WHEN_UNSATISFIABLE_DO_NOT_SCHEDULE
        )
    return out


def priority_class_from_pb(c: pb.PriorityClass) -> PriorityClass:
    try:
        return check_class(
            c.name, c.value, c.preemption_policy or None, c.description, c.global_default
        )
    except PriorityClassError as exc:
        raise WireError(str(exc)) from None


def priority_class_to_pb(c: PriorityClass, out: pb.PriorityClass) -> pb.PriorityClass:
    out.name, out.value, out.preemption_policy = c.name, c.value, c.preemption_policy.value
    out.description, out.global_default = c.description, c.global_default
    return out


def taint_to_pb(t: Taint, out: pb.Taint) -> pb.Taint:
    out.key, out.value, out.effect = t.key, t.value, _EFFECT_TO_PB[t.effect]
    return out


def quota_from_pb(q: op.Quota) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """(guarantee, limit) as the core's SetQuota takes them: an unset limit is ``inf``."""
    if q.guarantee.ports:
        raise WireError("quota: ports are not part of a quota (cpus, mem, disk, gpus)")
    guarantee = tuple(getattr(q.guarantee, n) for n in SCALARS)
    limit = tuple(getattr(q.limit, n) if q.limit.HasField(n) else math.inf for n in SCALARS)
    return guarantee, limit


def quota_to_pb(quota: Quota, out: op.Quota) -> op.Quota:
    scalars_to_pb(quota.guarantee, (), out.guarantee)
    for resource, value in zip(SCALARS, quota.limit, strict=True):
        if value != math.inf:
            setattr(out.limit, resource, value)
    return out
