"""The general walk (several roles, weights, quota guarantees and limits, headroom,
reservations, PreferNoSchedule taints): the one kernel of that shape, compiled with numba for
``--allocator numba`` (the master's default) and run as this same source by the interpreter for
``--allocator numpy`` and where numba is absent (jit.py). general_walk.py builds its state and
writes its results back; it makes the reference's decisions (reference.py's CYCLE).

Why it is fast: the DRF order is kept as Mesos' hierarchical sorter keeps it, not re-sorted per
agent. Roles (few) are one array sorted by (quota tier, share / weight, count, name rank);
within a role its frameworks are a gap buffer sorted by (share, count, id rank), as in
``fastpath_kernel.py``. A charge raises only the charged framework's key and its role's key,
so each moves right, and nothing else moves. An offer depends on the framework only through its
role, so it is computed once per role visited, and a role whose offer is not allocatable is
passed over whole. PreferNoSchedule puts intolerant frameworks after all tolerant ones on that
agent: the agent is walked in two passes over the same orders.

Skipped frameworks stay skipped, as in the reference (its docstring says why): after a charge
of framework f in role r, roles passed over in this pass are flagged, role r resumes after f's
old place, and later roles are walked from their head.

Arithmetic mirrors ``quota.py``, ``charge_moves.charge`` and ``ReservationBook`` operation by
operation (IEEE doubles, same order), and calls ``drf.dominant_share``, so the results are
bit-identical. The one sum kept incrementally is the headroom's available
unreserved free resources (summed over every agent by ``quota.allowance``): the walk carries a
running sum with a rounding-error bound, and sums afresh, in ``quota.allowance``'s row order,
whenever the bound cannot decide whether the allowance is the smallest term of an offer.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from corral.master.allocator.drf import dominant_share
from corral.master.allocator.fastpath_kernel import fw_before
from corral.master.allocator.jit import compiled, helper, prefetch

_EPS = 2.0**-52
INF = math.inf
# How many agents ahead the walk asks the CPU for an agent's rows (``jit.prefetch``), and for
# how many of the first roles and their first frameworks.
AHEAD = 8
AHEAD_ROLES = 3


@helper
def _max0(v: float) -> float:
    # Python's max(0.0, v): 0.0 unless v is greater.
    return v if v > 0.0 else 0.0


@helper
def _allocatable(x: Any, min_rows: Any) -> bool:
    for r in range(min_rows.shape[0]):
        met = True
        for k in range(4):
            if x[k] < min_rows[r, k]:
                met = False
                break
        if met:
            return True
    return False


@helper
def _entry(e_first: Any, e_count: Any, e_role: Any, a: int, r: int) -> int:
    """The reservation entry of role r on agent a, or -1."""
    first = e_first[a]
    if first < 0:
        return -1
    for e in range(first, first + e_count[a]):
        if e_role[e] == r:
            return e
    return -1


@helper
def _unallocated(r: int, role_ptr: Any, role_entries: Any, e_amount: Any, e_used: Any,
                 out: Any) -> None:  # fmt: skip
    # ReservationBook.unallocated: free of the role's entries summed in agent row order.
    for k in range(4):
        out[r, k] = 0.0
    for j in range(role_ptr[r], role_ptr[r + 1]):
        e = role_entries[j]
        for k in range(4):
            out[r, k] = out[r, k] + _max0(e_amount[e, k] - e_used[e, k])


@helper
def _consumed(r: int, k: int, role_alloc: Any, unalloc: Any, has_res: bool) -> float:
    # quota.consumption: allocation (+ unallocated reservations if any exist).
    x: float = role_alloc[r, k]
    if has_res:
        x = x + unalloc[r, k]
    return x


@helper
def _refresh_unmet(role_alloc: Any, unalloc: Any, has_res: bool, guarantee: Any, unmet: Any,
                   req: Any) -> None:  # fmt: skip
    # quota.unmet for every role and quota.required (summed in role order).
    for k in range(4):
        req[k] = 0.0
    for r in range(guarantee.shape[0]):
        for k in range(4):
            unmet[r, k] = _max0(guarantee[r, k] - _consumed(r, k, role_alloc, unalloc, has_res))
            req[k] = req[k] + unmet[r, k]


@helper
def _exact_available(capacity: Any, used: Any, counted: Any, avail: Any, err: Any) -> None:
    # quota.allowance's available: unreserved free of the counted rows, in row order.
    for k in range(4):
        avail[k] = 0.0
        err[k] = 0.0
    for a in range(counted.shape[0]):
        if counted[a]:
            for k in range(4):
                x = capacity[a, k] - used[a, k]
                avail[k] = avail[k] + (x if x > 0.0 else 0.0)


# The role comparison takes keys, not the key arrays (as ``fastpath_kernel.fw_before`` does for
# frameworks): an array passed to a compiled helper costs two atomic reference-count updates
# per call, and these run ~20 times per charge (a third of the walk's time when they took
# arrays).
@helper
def _role_before(
    t1: int, k1: float, c1: int, q1: int, t2: int, k2: float, c2: int, q2: int
) -> bool:
    """Does a role keyed (tier, share / weight, count, name rank) t1, k1, c1, q1 sort before one
    keyed t2, k2, c2, q2?"""
    if t1 != t2:
        return t1 < t2
    if k1 != k2:
        return k1 < k2
    if c1 != c2:
        return c1 < c2
    return q1 < q2


def _walk(
    candidates: Any, free0: Any, i0: int, cpus: float,
    ok: Any, filtered: Any, prefer_not: Any, soft: Any,
    capacity: Any, used: Any, counted: Any,
    alloc: Any, fkey: Any, fw_count: Any, frank: Any, fw_role: Any,
    role_alloc: Any, rkey: Any, tier: Any, role_count: Any, rrank: Any, weight: Any,
    guarantee: Any, limit: Any, has_guarantee: Any, quota_role: Any,
    buf: Any, base: Any, cap: Any, start: Any, end: Any, rorder: Any,
    e_first: Any, e_count: Any, e_role: Any, e_amount: Any, e_used: Any, e_touched: Any,
    free_sum: Any, role_ptr: Any, role_entries: Any, has_res: bool,
    total: Any, cols: Any, min_rows: Any, guarded: bool,
    unalloc: Any, unmet: Any, req: Any, avail: Any, err: Any, planned: Any,
    done: Any, skipped: Any, resume: Any,
    out_f: Any, out_a: Any, out_x: Any, n0: int, room: int, count: Any,
) -> int:  # fmt: skip
    """Walks candidates[i0:] until the output has less than ``room`` slots left; returns the
    next candidate index (len(candidates) when done, -1 - i when the budget stopped it at i).
    ``free0[i]``: candidate i's unreserved free resources as ``cycle.select`` found them
    (nothing charges an agent before its turn). ``n0`` offers are already in the output; the
    count after is ``count[0]``, the cpus planned so far ``planned[0]``."""
    n = n0
    nroles = rorder.shape[0]
    offer = np.empty(4)
    most = np.empty(4)
    i = i0
    while i < candidates.shape[0]:
        if planned[0] >= cpus:
            count[0] = n
            return -1 - i
        if out_f.shape[0] - n < room:
            count[0] = n
            return i
        a = candidates[i]
        stamp = i + 1
        if i + AHEAD < candidates.shape[0]:
            # Which framework that agent will go to is not known yet. The likeliest (measured
            # on the benchmark: the row's cache line is found ~3 times in 4): one of the first
            # few frameworks of the first few roles, as the roles ahead keep winning offers and
            # their frameworks take turns.
            b = candidates[i + AHEAD]
            prefetch(capacity, b, 0)
            prefetch(used, b, 0)
            for oi in range(min(AHEAD_ROLES, nroles)):
                r = rorder[oi]
                for j in range(start[r], min(end[r], start[r] + AHEAD_ROLES)):
                    prefetch(ok, b, buf[j])
                    prefetch(filtered, b, buf[j])
        passes = 2 if soft[a] else 1
        more = True
        fresh = True  # a not charged yet: free0[i] is its unreserved free
        for p in range(passes):
            if not more:
                break
            for j in range(nroles):
                skipped[rorder[j]] = False
                resume[rorder[j]] = 0
            charged = False  # the candidates were selected with something allocatable
            while True:
                if charged:
                    # Has the agent anything allocatable left? (reference.py's _pick: no
                    # offer of the agent can be allocatable any more)
                    for k in range(4):
                        most[k] = _max0(capacity[a, k] - used[a, k])
                        if has_res:
                            most[k] = most[k] + free_sum[a, k]
                    if not _allocatable(most, min_rows):
                        more = False
                        break
                picked = -1
                role = -1
                opos = -1
                for oi in range(nroles):
                    r = rorder[oi]
                    if skipped[r]:
                        continue
                    # The offer of role r on a (quota.offer), the same for all its
                    # frameworks.
                    e = _entry(e_first, e_count, e_role, a, r) if has_res else -1
                    req_pending = False
                    if guarded:
                        for k in range(4):
                            if req[k] > 0:
                                req_pending = True
                    for k in range(4):
                        remaining = INF  # max(0, inf - consumption) without a limit
                        if quota_role[r]:
                            remaining = _max0(
                                limit[r, k] - _consumed(r, k, role_alloc, unalloc, has_res)
                            )
                        from_res = 0.0
                        if e >= 0:
                            from_res = _max0(e_amount[e, k] - e_used[e, k])
                        unres = free0[i, k] if fresh else _max0(capacity[a, k] - used[a, k])
                        smallest = unres
                        if remaining < smallest:
                            smallest = remaining
                        if req_pending:
                            exact = err[k] == 0.0
                            if not exact:
                                # The allowance can only matter if it may be the smallest.
                                low = unmet[r, k] + _max0((avail[k] - 2.0 * err[k]) - req[k])
                                if not low >= smallest:
                                    _exact_available(capacity, used, counted, avail, err)
                                    exact = True
                            if exact:
                                allowance = unmet[r, k] + _max0(avail[k] - req[k])
                                if allowance < smallest:
                                    smallest = allowance
                        offer[k] = from_res + smallest
                    if not _allocatable(offer, min_rows):
                        skipped[r] = True
                        continue
                    s0 = start[r]
                    for j in range(s0 + resume[r], end[r]):
                        g = buf[j]
                        if done[g] == stamp:
                            continue
                        if passes == 2 and prefer_not[a, g] != (p == 1):
                            continue
                        if ok[a, g] and not filtered[a, g]:
                            picked = g
                            opos = j
                            break
                    if picked < 0:
                        skipped[r] = True
                        continue
                    role = r
                    break
                if picked < 0:
                    break
                f = picked
                r = role
                # ---- charge (charge_moves.charge) ----
                for k in range(4):
                    x = offer[k]
                    alloc[f, k] += x
                    role_alloc[r, k] += x
                fw_count[f] += 1
                role_count[r] += 1
                e = _entry(e_first, e_count, e_role, a, r) if has_res else -1
                for k in range(4):
                    took = 0.0
                    if e >= 0:
                        free = _max0(e_amount[e, k] - e_used[e, k])
                        took = free if free < offer[k] else offer[k]
                        e_used[e, k] = e_used[e, k] + took
                    before = _max0(capacity[a, k] - used[a, k]) if guarded else 0.0
                    used[a, k] = used[a, k] + offer[k] - took
                    if guarded:
                        # The running available sum and its rounding-error bound.
                        d = _max0(capacity[a, k] - used[a, k]) - before
                        avail[k] = avail[k] + d
                        err[k] = err[k] + 4.0 * _EPS * (abs(avail[k]) + abs(d)) + 1e-300
                if e >= 0:
                    e_touched[e] = True
                    # ReservationBook._refresh: free_sum of the agent, entries in their order.
                    for k in range(4):
                        free_sum[a, k] = 0.0
                    for e2 in range(e_first[a], e_first[a] + e_count[a]):
                        for k in range(4):
                            free_sum[a, k] = free_sum[a, k] + _max0(e_amount[e2, k] - e_used[e2, k])
                    if quota_role[r]:  # only a role with a quota reads its consumption
                        _unallocated(r, role_ptr, role_entries, e_amount, e_used, unalloc)
                charged = True
                fresh = False
                out_f[n] = f
                out_a[n] = a
                for k in range(4):
                    out_x[n, k] = offer[k]
                n += 1
                planned[0] = planned[0] + offer[0]
                done[f] = stamp
                # ---- keys (recomputed as the reference recomputes them) ----
                fkey[f] = dominant_share(alloc, f, total, cols)
                rkey[r] = dominant_share(role_alloc, r, total, cols) / weight[r]
                if has_guarantee[r]:
                    _refresh_unmet(role_alloc, unalloc, has_res, guarantee, unmet, req)
                    t = 1
                    for k in range(4):
                        if unmet[r, k] > 0:
                            t = 0
                    tier[r] = t
                # ---- f moves right in its role's buffer ----
                if end[r] == base[r] + cap[r]:
                    shift = start[r] - base[r]
                    for j in range(end[r] - start[r]):
                        buf[base[r] + j] = buf[start[r] + j]
                    start[r] -= shift
                    end[r] -= shift
                    opos -= shift
                resume[r] = opos - start[r]  # skip what was before f (it stays skipped)
                for j in range(opos, start[r], -1):
                    buf[j] = buf[j - 1]
                start[r] += 1
                s = fkey[f]
                got = fw_count[f]
                q = frank[f]
                lo = opos + 1
                hi = end[r]
                while lo < hi:
                    mid = (lo + hi) >> 1
                    g = buf[mid]
                    if fw_before(fkey[g], fw_count[g], frank[g], s, got, q):
                        lo = mid + 1
                    else:
                        hi = mid
                for j in range(end[r], lo, -1):
                    buf[j] = buf[j - 1]
                buf[lo] = f
                end[r] += 1
                # ---- role r moves right in the role order ----
                oi = 0
                while rorder[oi] != r:
                    oi += 1
                rt, rk, rc, rq = tier[r], rkey[r], role_count[r], rrank[r]
                while oi + 1 < nroles:
                    r1 = rorder[oi + 1]
                    if not _role_before(
                        tier[r1], rkey[r1], role_count[r1], rrank[r1], rt, rk, rc, rq
                    ):
                        break
                    rorder[oi] = rorder[oi + 1]
                    oi += 1
                rorder[oi] = r
        i += 1
    count[0] = n
    return i


walk_kernel = compiled(_walk)
refresh_unmet = _refresh_unmet
