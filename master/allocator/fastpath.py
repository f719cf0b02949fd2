"""The walk of a cycle for the common case, without a sort per agent.

When every framework of the pass (one priority level, order.py) is in one role and no role has
a guarantee, no role a limit, no walked agent reservations or PreferNoSchedule taints, the
reference's rules reduce to: each agent in walk order offers all its unreserved free resources
to the first eligible framework in (dominant share, allocations received, id) order (order.py's
keys 7-9), whose share and count then grow. Exactly the same decisions, made by
one of two walks (``DrfAllocator.kernel``): ``fastpath_compiled.py``, compiled with numba (the
master's default), and ``_walk_numpy`` below, which needs no compiler. The numpy walk, in Python:

- The order is one sorted list of (share, count, id rank, framework), kept sorted by moving only the
  framework just charged (``bisect``), instead of a ``lexsort`` of the eligible frameworks for
  every agent.
- An agent's first eligible framework is found by probing the head of that list, and when the
  head is filtered for it, by one vector lookup over a chunk of upcoming agents at once.
- A chunk's answer stays right until the framework it names is charged: a charge only moves the
  charged framework later, so for any agent whose answer is another framework nothing before
  that answer became eligible. A stale answer is recomputed with the current order.
"""

from __future__ import annotations

import math
from bisect import bisect_left, insort
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import numpy.typing as npt

from corral.master.allocator import drf, fastpath_compiled

if TYPE_CHECKING:
    from corral.master.allocator.numpy_allocator import DrfAllocator

Vec = list[float]
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


_PROBE = 4  # head entries checked one by one before a vector lookup
_CHUNK_MAX = 512


def applies(al: DrfAllocator, active: npt.NDArray[np.intp]) -> bool:
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
    al: DrfAllocator,
    candidates: npt.NDArray[np.intp],
    free: F64,
    active: npt.NDArray[np.intp],
    m: int,
) -> Walked:
    """(frameworks, agents, offers) in walk order for the framework rows ``active`` (the
    cycle's pass); charges the allocator as it goes. ``free[i]``: what candidate i has free
    (all of it is offered)."""
    if al.kernel == "numba":
        return _walk_compiled(al, candidates, free, active, m)
    return _walk_numpy(al, candidates, free, active)


def _walk_compiled(
    al: DrfAllocator,
    candidates: npt.NDArray[np.intp],
    free: F64,
    active: npt.NDArray[np.intp],
    m: int,
) -> Walked:
    cols = np.asarray(drf.fair_columns(al.cluster, al._fair), dtype=np.intp)
    share = np.zeros(m)
    share[active] = drf.dominant_shares(al.alloc[active], al.cluster, cols.tolist())
    count = al.fw_count  # charged in place by the kernel
    rank = np.ascontiguousarray(al.framework_ranks()[:m])
    order = active[np.lexsort((rank[active], count[active], share[active]))]
    role = int(al.fw_role[active[0]])
    idx, frameworks = fastpath_compiled.walk(
        candidates, free, al.placement.ok, al.filters.active, order, share, count, rank,
        al.alloc, al.role_alloc[role], al.cluster, cols, al.used,
    )  # fmt: skip
    al.role_count[role] += len(idx)
    agents = candidates[idx]
    offers = free[idx]
    al.charges.add(frameworks, agents, offers)
    return Walked(frameworks, agents, offers)


def _walk_numpy(
    al: DrfAllocator, candidates: npt.NDArray[np.intp], free_rows: F64, active: npt.NDArray[np.intp]
) -> Walked:
    """The same walk in Python over the numpy masks (no compiler needed)."""
    cols = drf.fair_columns(al.cluster, al._fair)
    total = al.cluster.tolist()
    shares = drf.dominant_shares(al.alloc[active], al.cluster, cols).tolist()
    counts = al.fw_count[active].tolist()
    ranks = al.framework_ranks()[active].tolist()
    keys: list[tuple[float, int, int, int]] = sorted(
        zip(shares, counts, ranks, active.tolist(), strict=True)
    )
    key_of = {k[3]: k for k in keys}
    ok, filtered = al.placement.ok, al.filters.active
    agents = candidates.tolist()
    free = free_rows.tolist()

    # Charges are added up in Python floats in the same order as ``charge_moves.charge`` adds
    # them in numpy (IEEE doubles either way, so bit-identical) and written back at the end.
    role = int(al.fw_role[active[0]])
    role_row = al.role_alloc[role].tolist()
    rows_of: dict[int, Vec] = {}
    out: list[tuple[int, int, Vec]] = []
    chunk_start, chunk_len = 0, 0
    chunk_order: list[int] = []
    first: list[int] = []
    has: list[bool] = []
    charged: set[int] = set()
    size = 16

    def lookup(i: int) -> None:
        nonlocal chunk_start, chunk_len, chunk_order, first, has, charged
        order = np.fromiter((k[3] for k in keys), dtype=np.intp, count=len(keys))
        rows = candidates[i : i + size]
        eligible: npt.NDArray[np.bool_] = ok[np.ix_(rows, order)] & ~filtered[np.ix_(rows, order)]
        first = [int(x) for x in eligible.argmax(axis=1)]
        has = [bool(x) for x in np.asarray(eligible.any(axis=1))]
        chunk_start, chunk_len = i, len(rows)
        chunk_order = order.tolist()
        charged = set()

    for i, a in enumerate(agents):
        f = -1
        for k in keys[:_PROBE]:
            if ok[a, k[3]] and not filtered[a, k[3]]:
                f = k[3]
                break
        if f < 0:
            j = i - chunk_start
            if not 0 <= j < chunk_len:
                lookup(i)
                j = 0
            if not has[j]:
                continue  # eligibility does not change within a cycle
            f = chunk_order[first[j]]
            if f in charged:
                size = max(1, size // 2)
                lookup(i)
                f = chunk_order[first[0]]
            elif j == chunk_len - 1:
                size = min(_CHUNK_MAX, size * 2)
        offer = free[i]
        row = rows_of.get(f)
        if row is None:
            row = al.alloc[f].tolist()
        row = rows_of[f] = [x + y for x, y in zip(row, offer, strict=True)]
        role_row = [x + y for x, y in zip(role_row, offer, strict=True)]
        old = key_of[f]
        del keys[bisect_left(keys, old)]
        new = (drf.dominant_share([row], 0, total, cols), old[1] + 1, old[2], f)
        insort(keys, new)
        key_of[f] = new
        charged.add(f)
        out.append((f, a, offer))
    for f, row in rows_of.items():
        al.alloc[f] = row
        al.fw_count[f] = key_of[f][1]
    al.role_alloc[role] = role_row
    al.role_count[role] += len(out)
    walked = Walked.of(out)
    # Every walked agent is charged once at most: one addition, as _charge makes.
    al.used[walked.agents] += walked.offers
    al.charges.add(*walked)
    return walked
