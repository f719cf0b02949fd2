"""What both allocator implementations share: their options, input validation and the fixed
reason strings of ``explain()``.

Sharing these (and only these) keeps the numpy allocator and the reference from drifting apart in
anything that is not a decision; the decisions themselves are written twice on purpose.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from corral.placement import AttributeConstraint, Taint
from corral.resources import SCALARS

# Reason strings of Explanation.reasons. Fixed, so dashboards and tests can match on them.
REASON_SUPPRESSED = "suppressed"
REASON_FILTER = "refuse filter"
REASON_DRAINING = "agent draining"
REASON_NO_FREE = "no free resources"
REASON_HEADROOM = "headroom kept for unmet guarantees"
REASON_ORDER = "lower DRF order"


def taint_reason(taint: Taint) -> str:
    return f"taint {taint}"


def constraint_reason(constraint: AttributeConstraint) -> str:
    return f"constraint {constraint} not met"


def quota_reason(resource: str) -> str:
    return f"quota limit {resource} reached"


DEFAULT_MIN_ALLOCATABLE: Mapping[str, float] = {"cpus": 0.01, "mem": 32.0}


@dataclass(frozen=True, slots=True)
class AllocatorOptions:
    """``min_allocatable``: an offer is made only if at least one listed resource reaches its
    threshold (Mesos' --min_allocatable_resources). ``fairness_exclude``: resources that do not
    count in dominant shares (scarce ones such as gpus, so one GPU does not dominate a share)."""

    min_allocatable: Mapping[str, float] = field(
        default_factory=lambda: dict(DEFAULT_MIN_ALLOCATABLE)
    )
    fairness_exclude: tuple[str, ...] = ("gpus",)

    def __post_init__(self) -> None:
        for name, value in self.min_allocatable.items():
            if name not in SCALARS:
                raise ValueError(f"min_allocatable: unknown resource {name!r}")
            if not math.isfinite(value) or value <= 0:
                raise ValueError(f"min_allocatable: {name} must be a positive number")
        if not self.min_allocatable:
            raise ValueError("min_allocatable needs at least one resource")
        for name in self.fairness_exclude:
            if name not in SCALARS:
                raise ValueError(f"fairness_exclude: unknown resource {name!r}")

    def min_vector(self) -> tuple[float, float, float, float]:
        """Thresholds by SCALARS index; inf where a resource does not qualify an offer."""
        v = [self.min_allocatable.get(name, math.inf) for name in SCALARS]
        return (v[0], v[1], v[2], v[3])

    def fair_indices(self) -> tuple[int, ...]:
        return tuple(i for i, name in enumerate(SCALARS) if name not in self.fairness_exclude)


def make_options(
    min_allocatable: Mapping[str, float] | None = None,
    fairness_exclude: Iterable[str] | None = None,
) -> AllocatorOptions:
    return AllocatorOptions(
        min_allocatable=dict(min_allocatable or DEFAULT_MIN_ALLOCATABLE),
        fairness_exclude=("gpus",) if fairness_exclude is None else tuple(fairness_exclude),
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
