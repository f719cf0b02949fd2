"""The walk of a cycle for the common case, without a sort per agent: when it applies, the
state its kernel walks (``fastpath_kernel.py``), and the results written back.

When every framework of the pass (one priority level, order.py) is in one role and no role has
a guarantee, no role a limit, no walked agent reservations or PreferNoSchedule taints, the
reference's rules reduce to: each agent in walk order offers all its unreserved free resources
to the first eligible framework in (dominant share, allocations received, id) order (order.py's
keys 7-9), whose share and count then grow. Exactly the same decisions, made by one kernel,
compiled with numba or (``DrfAllocator.kernel == "numpy"``) run as its own source.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import numpy.typing as npt

from corral.master.allocator import drf, fastpath_kernel

if TYPE_CHECKING:
    from corral.master.allocator.arrays import AllocatorArrays

F64 = npt.NDArray[np.float64]


class Walked(NamedTuple):
    """A walk's offers as parallel arrays: framework row, agent row, scalars [n, 4]."""

    frameworks: npt.NDArray[np.intp]
    agents: npt.NDArray[np.intp]
    offers: npt.NDArray[np.float64]

    @classmethod
    def of(cls, rows: Sequence[tuple[int, int, Sequence[float]]]) -> Walked:
        """The columns of (framework, agent, scalars) rows."""
        n = len(rows)
        return cls(
            np.fromiter((f for f, _, _ in rows), dtype=np.intp, count=n),
            np.fromiter((a for _, a, _ in rows), dtype=np.intp, count=n),
            np.array([x for _, _, x in rows], dtype=np.float64).reshape(n, 4),
        )


def applies(al: AllocatorArrays, active: npt.NDArray[np.intp]) -> bool:
    """The rules on frameworks and roles for the pass's framework rows ``active``; the caller
    checks the candidates' reservations and soft taints (it has them from its selection)."""
    if not len(active):
        return False
    roles = np.unique(al.fw_role[active])
    if len(roles) != 1:
        return False
    if any(any(g > 0 for g in gs) for gs in al.guarantee):
        return False
    return all(math.isinf(x) for x in al.limit[int(roles[0])])


def walk(
    al: AllocatorArrays,
    candidates: npt.NDArray[np.intp],
    free: F64,
    active: npt.NDArray[np.intp],
    m: int,
    blocked: npt.NDArray[np.bool_],
) -> Walked:
    """(frameworks, agents, offers) in walk order for the framework rows ``active`` (the
    cycle's pass); charges the allocator as it goes. ``free[i]``: what candidate i has free
    (all of it is offered); ``blocked``: the pairs the dynamic rules close (eligibility.py)."""
    cols = np.asarray(drf.fair_columns(al.cluster, al._fair), dtype=np.intp)
    share = np.zeros(m)
    share[active] = drf.dominant_shares(al.alloc[active], al.cluster, cols.tolist())
    count = al.fw_count  # charged in place by the kernel
    rank = np.ascontiguousarray(al.framework_ranks()[:m])
    order = active[np.lexsort((rank[active], count[active], share[active]))]
    role = int(al.fw_role[active[0]])
    idx, frameworks = fastpath_kernel.walk(
        candidates, free, al.placement.ok, blocked, order, share, count, rank,
        al.alloc, al.role_alloc[role], al.cluster, cols, al.used, al.kernel == "numpy",
    )  # fmt: skip
    al.role_count[role] += len(idx)
    agents = candidates[idx]
    offers = free[idx]
    al.charges.add(frameworks, agents, offers)
    return Walked(frameworks, agents, offers)
