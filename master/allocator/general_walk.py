"""The general walk of a cycle: the state its kernel (``general_walk_kernel``) walks, built
from the allocator's arrays, and its results written back.

``DrfAllocator.cycle`` takes this when the fast path does not apply (several roles, a quota,
reservations or PreferNoSchedule taints on the candidates), with either allocator kind: the
kernel runs compiled (``"numba"``) or as its own source (``"numpy"``), making the reference's
decisions either way.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from corral.master.allocator import drf, general_walk_kernel
from corral.master.allocator.fastpath import Walked
from corral.master.allocator.jit import python
from corral.master.allocator.reservations import to_arrays

if TYPE_CHECKING:
    from corral.master.allocator.arrays import AllocatorArrays

F64 = npt.NDArray[np.float64]


def _role_buffers(
    al: AllocatorArrays, active: npt.NDArray[np.intp], fkey: F64, rank: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.intp], ...]:
    """Per role, its active frameworks sorted by (share, count, id rank) in a region of one
    buffer, with room to move right (``general_walk_kernel`` compacts a region when it is full).
    Returns (buf, base, cap, start, end)."""
    roles = len(al.role_names)
    role_of = al.fw_role[active]
    ordered = np.lexsort((rank[active], al.fw_count[active], fkey[active], role_of))
    counts = np.bincount(role_of, minlength=roles).astype(np.intp)
    cap = 2 * counts + 8
    base = np.zeros(roles, dtype=np.intp)
    base[1:] = np.cumsum(cap)[:-1]
    first = np.zeros(roles, dtype=np.intp)
    first[1:] = np.cumsum(counts)[:-1]
    sorted_roles = role_of[ordered]
    dest = base[sorted_roles] + np.arange(len(active)) - first[sorted_roles]
    buf = np.empty(int(cap.sum()), dtype=np.intp)
    buf[dest] = active[ordered]
    return buf, base, cap, base.copy(), base + counts


def walk(
    al: AllocatorArrays,
    candidates: npt.NDArray[np.intp],
    free: F64,
    active: npt.NDArray[np.intp],
    m: int,
    blocked: npt.NDArray[np.bool_],
    counted: npt.NDArray[np.bool_],
    cpus: float,
    planned_before: float = 0.0,
) -> Walked:
    """(frameworks, agents, offers) of the candidates in walk order for the framework rows
    ``active`` (the cycle's pass), stopping at the ``cpus`` budget as ``DrfAllocator.cycle``
    does, ``planned_before`` cpus being planned already; charges the allocator as it goes.
    ``free[i]``: candidate i's unreserved free resources (``cycle.select``); ``blocked``: the
    pairs the dynamic rules close; ``counted``: the agents whose free resources count in the
    headroom (alive, not closed; quota.allowance)."""
    roles = len(al.role_names)
    cols_list = drf.fair_columns(al.cluster, al._fair)
    cols = np.asarray(cols_list, dtype=np.intp)
    fkey = np.ascontiguousarray(drf.dominant_shares(al.alloc[:m], al.cluster, cols_list))
    rank = np.ascontiguousarray(al.framework_ranks()[:m])
    tier, rkey, rrank = al.role_keys()
    buf, base, cap, start, end = _role_buffers(al, active, fkey, rank)
    present = np.flatnonzero(end > start).astype(np.intp)
    rorder = present[
        np.lexsort((rrank[present], al.role_count[present], rkey[present], tier[present]))
    ]
    guarantee = np.asarray(al.guarantee, dtype=np.float64).reshape(roles, 4)
    limit = np.asarray(al.limit, dtype=np.float64).reshape(roles, 4)
    has_guarantee = (guarantee > 0).any(axis=1)
    quota_role = has_guarantee | np.isfinite(limit).any(axis=1)
    book = al.reservations
    res = to_arrays(book, roles)
    has_res = bool(book.by_agent)
    unalloc = np.zeros((roles, 4))
    for r in np.flatnonzero(quota_role).tolist():
        if has_res:
            unalloc[r] = book.unallocated(r)
    unmet = np.zeros((roles, 4))
    req = np.zeros(4)
    general_walk_kernel.refresh_unmet(al.role_alloc, unalloc, has_res, guarantee, unmet, req)
    # The available sum is computed by the walk when first needed (an infinite error bound).
    avail, err = np.zeros(4), np.full(4, math.inf)
    done = np.zeros(m, dtype=np.int64)
    skipped = np.zeros(roles, dtype=np.bool_)
    resume = np.zeros(roles, dtype=np.intp)
    planned = np.array([planned_before])
    count = np.zeros(1, dtype=np.int64)
    room = len(active)  # offers one agent can make at most
    size = len(candidates) + room + 16
    out_f = np.empty(size, dtype=np.intp)
    out_a = np.empty(size, dtype=np.intp)
    out_x = np.empty((size, 4))
    kernel = general_walk_kernel.walk_kernel
    if al.kernel == "numpy":
        kernel = python(kernel)
    i, n = 0, 0
    while True:
        i = kernel(
            candidates, free, i, float(cpus), al.placement.ok, blocked, al.placement.prefer_not,
            al.placement.has_soft_taints, al.capacity, al.used, counted,
            al.alloc, fkey, al.fw_count, rank, al.fw_role,
            al.role_alloc, rkey, tier, al.role_count, rrank, np.asarray(al.weight),
            guarantee, limit, has_guarantee, quota_role,
            buf, base, cap, start, end, rorder,
            res.first, res.count, res.role, res.amount, res.used, res.touched,
            book.free_sum, res.role_ptr, res.role_entries, has_res,
            al.cluster, cols, al._min_array, bool(has_guarantee.any()),
            unalloc, unmet, req, avail, err, planned,
            done, skipped, resume,
            out_f, out_a, out_x, n, room, count,
        )  # fmt: skip
        n = int(count[0])
        if i < 0 or i >= len(candidates):
            break
        # The output is nearly full: grow it and carry on with candidate i.
        out_f = np.concatenate([out_f, np.empty(size, dtype=np.intp)])
        out_a = np.concatenate([out_a, np.empty(size, dtype=np.intp)])
        out_x = np.concatenate([out_x, np.empty((size, 4))])
    book.set_used(res)
    walked = Walked(out_f[:n].copy(), out_a[:n].copy(), out_x[:n].copy())
    al.charges.add(*walked)
    return walked


@functools.cache  # once per process
def warm(allocator: Callable[..., AllocatorArrays]) -> None:
    """Compile (or load from numba's cache) before the first cycle. ``allocator``: the class
    whose state the walk reads (passed in, so this module never imports it)."""
    al = allocator(kernel="numpy")  # "numpy": its constructor does not warm up (recursion)
    al.add_agent("a", (1.0, 1.0, 1.0, 0.0), {}, [], {"r": (0.5, 0.0, 0.0, 0.0)})
    al.add_framework("f", "r")
    al.set_quota("r", (1.0, 0.0, 0.0, 0.0), None)
    al.kernel = "numba"  # walked compiled: what is warmed
    rows = np.flatnonzero(al.fw_active[: al._frameworks.size])
    blocked = np.zeros((1, 1), dtype=np.bool_)
    counted = np.ones(1, dtype=np.bool_)
    one = np.ones((1, 4))
    walk(al, np.zeros(1, dtype=np.intp), one, rows, al._frameworks.size, blocked, counted, math.inf)
