"""What both allocator implementations share: their options, input validation and the fixed
reason strings of ``explain()``.

Sharing these keeps the numpy allocator and the reference from drifting apart in anything that
is not a decision. A decision that is one formula is written once and both call it (resource
fit: corral/resources.py; the dominant share: drf.py; an offer's size and each rule's
predicate: rules/); how the decisions are walked is written twice on purpose, plainly in the
reference and as arrays and kernels in the numpy allocator, and the property tests hold the two
equal.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from corral.master.allocator.rules import (
    draining,
    filters,
    gpus,
    pressure,
    quota,
    resources,
    suppression,
)
from corral.master.allocator.rules.constraints import reason as constraint_reason
from corral.master.allocator.rules.quota import limit_reason as quota_reason
from corral.master.allocator.rules.taints import reason as taint_reason
from corral.pairs import items
from corral.resources import SCALARS

# Reason strings of Explanation.reasons. Fixed, so dashboards and tests can match on them; each
# is its rule's (rules/), named here for explain and the allocators.
REASON_SUPPRESSED = suppression.REASON
REASON_FILTER = filters.REASON
REASON_DRAINING = draining.REASON
REASON_NO_FREE = resources.REASON_NO_FREE
REASON_HEADROOM = quota.REASON_HEADROOM
REASON_ORDER = "lower DRF order"  # not a rule: the DRF order, explain's last reason
REASON_GPU = gpus.REASON
REASON_PRESSURE = pressure.REASON

__all__ = ["constraint_reason", "quota_reason", "taint_reason"]


Alternative = Mapping[str, float]
# Mesos' default --min_allocatable_resources: "cpus:0.01|mem:32".
DEFAULT_MIN_ALLOCATABLE: tuple[Alternative, ...] = ({"cpus": 0.01}, {"mem": 32.0})


@dataclass(frozen=True, slots=True)
class AllocatorOptions:
    """``min_allocatable``: alternatives, as Mesos' --min_allocatable_resources; an offer is
    made only if it meets every threshold of at least one alternative. ``fairness_exclude``:
    resources that do not count in dominant shares (scarce ones such as gpus, so one GPU does
    not dominate a share; Mesos' --fair_sharing_excluded_resource_names)."""

    min_allocatable: tuple[Alternative, ...] = DEFAULT_MIN_ALLOCATABLE
    fairness_exclude: tuple[str, ...] = ("gpus",)
    filter_gpu_resources: bool = True  # rules/gpus.py

    def __post_init__(self) -> None:
        if not self.min_allocatable:
            raise ValueError("min allocatable resources: no alternative given")
        for alternative in self.min_allocatable:
            if not alternative:
                raise ValueError("min allocatable resources: an alternative names no resource")
            for name, value in alternative.items():
                if name not in SCALARS:
                    raise ValueError(
                        f"min allocatable resources: unknown resource {name!r} "
                        f"(known: {', '.join(SCALARS)})"
                    )
                if not math.isfinite(value) or value <= 0:
                    raise ValueError(f"min allocatable resources: {name} must be a positive number")
        for name in self.fairness_exclude:
            if name not in SCALARS:
                raise ValueError(
                    f"fair sharing excluded resources: unknown resource {name!r} "
                    f"(known: {', '.join(SCALARS)})"
                )

    def min_rows(self) -> tuple[tuple[float, float, float, float], ...]:
        """One row of thresholds (SCALARS order) per alternative; 0 where it names none, which
        every offer meets."""
        rows = []
        for alternative in self.min_allocatable:
            v = [float(alternative.get(name, 0.0)) for name in SCALARS]
            rows.append((v[0], v[1], v[2], v[3]))
        return tuple(rows)

    def fair_indices(self) -> tuple[int, ...]:
        return tuple(i for i, name in enumerate(SCALARS) if name not in self.fairness_exclude)


def allocatable(offer: Sequence[float], rows: Sequence[Sequence[float]]) -> bool:
    """Does ``offer`` meet every threshold of some alternative (``AllocatorOptions.min_rows``)?"""
    return any(all(o >= m for o, m in zip(offer, row, strict=True)) for row in rows)


def parse_min_allocatable(text: str) -> tuple[Alternative, ...]:
    """Mesos' format: alternatives separated by ``|``, each a ``;``-list of ``name:value``
    that must all be met, e.g. ``cpus:0.01|mem:32`` or ``cpus:1;mem:128|gpus:1``."""
    alternatives: list[Alternative] = []
    for part in text.split("|"):
        alternative: dict[str, float] = {}
        for name, value, item in items(part, ";", ":"):
            if value is None:
                raise ValueError(f"min allocatable resources: {item!r} is not name:value")
            try:
                alternative[name] = float(value)
            except ValueError:
                raise ValueError(f"min allocatable resources: {value!r} is not a number") from None
        alternatives.append(alternative)
    return AllocatorOptions(min_allocatable=tuple(alternatives)).min_allocatable


def make_options(
    min_allocatable: Mapping[str, float] | Sequence[Alternative] | str | None = None,
    fairness_exclude: Iterable[str] | None = None,
    filter_gpu_resources: bool = True,
) -> AllocatorOptions:
    """``min_allocatable``: Mesos' text form, a sequence of alternatives, or a mapping whose
    entries are each an alternative of their own (any one of them qualifies an offer)."""
    if min_allocatable is None:
        alternatives = DEFAULT_MIN_ALLOCATABLE
    elif isinstance(min_allocatable, str):
        alternatives = parse_min_allocatable(min_allocatable)
    elif isinstance(min_allocatable, Mapping):
        alternatives = tuple({name: value} for name, value in min_allocatable.items())
    else:
        alternatives = tuple(dict(a) for a in min_allocatable)
    return AllocatorOptions(
        min_allocatable=alternatives,
        fairness_exclude=("gpus",) if fairness_exclude is None else tuple(fairness_exclude),
        filter_gpu_resources=filter_gpu_resources,
    )


def check_scalars(what: str, values: Iterable[float], allow_inf: bool = False) -> tuple[float, ...]:
    """Four finite non-negative numbers, or ValueError naming ``what``."""
    out = tuple(float(v) for v in values)
    if len(out) != len(SCALARS):
        raise ValueError(f"{what}: expected {len(SCALARS)} scalars ({', '.join(SCALARS)})")
    for name, v in zip(SCALARS, out, strict=True):
        if math.isnan(v) or v < 0 or (math.isinf(v) and not allow_inf):
            raise ValueError(f"{what}: {name} must be a finite non-negative number, got {v}")
    return out


def check_scalar_rows(what: str, rows: Sequence[Iterable[float]]) -> npt.NDArray[np.float64]:
    """``check_scalars`` for many rows at once: an [n, 4] array, or ValueError naming the first
    bad row as ``check_scalars`` would."""
    n, width = len(rows), len(SCALARS)
    if n == 1:
        # One row (an accept's leftover, one task's end): the checks in Python, without the
        # numpy calls' fixed cost, which was most of a single recover.
        return np.array([check_scalars(what, rows[0])], dtype=np.float64)
    try:
        # fromiter over the flattened rows is twice as fast as np.array's shape discovery on
        # a list of lists (declines come thousands of rows at a time); the lengths are checked
        # first, so rows of 3 and 5 cannot pass for two of 4.
        if set(map(len, rows)) - {width}:  # type: ignore[arg-type]
            raise ValueError("a row of the wrong length")
        flat = itertools.chain.from_iterable(rows)
        out = np.fromiter(flat, dtype=np.float64, count=n * width).reshape(n, width)
    except (ValueError, TypeError):
        out = None
    if out is None or not bool(np.isfinite(out).all() and (out >= 0).all()):
        for row in rows:
            check_scalars(what, row)
        raise ValueError(f"{what}: expected rows of {len(SCALARS)} scalars ({', '.join(SCALARS)})")
    return out


def check_weight(role: str, weight: float) -> float:
    w = float(weight)
    if not math.isfinite(w) or w <= 0:
        raise ValueError(f"weight of role {role!r} must be a positive number, got {weight}")
    return w
