"""The fast path's walk (fastpath.py says when it applies): the one kernel of that shape,
compiled with numba for ``--allocator numba`` (the master's default) and run as this same
source by the interpreter for ``--allocator numpy`` and where numba is absent (jit.py).

Why compiled: the walk is sequential (every charge moves the DRF order), so numpy cannot
vectorise it, and in Python it costs ~10 µs per offered agent. Compiled, it is a scan of two
boolean rows and an O(1) move of the charged framework in the common case.

The DRF order lives in a gap buffer ``buf[start:end]`` sorted by (share, count, rank): order.py's
keys 7-9. A charge raises the charged framework's share and count, so its key only grows and it
moves right: the entries before it shift right by
one (``start`` advances) and the entries after its new place shift right by one (``end``
advances). When shares are close, the charged framework is near the head and lands near the
tail, so both shifts are short. ``buf`` has room for one advance per candidate, so it never
needs compacting.

Arithmetic mirrors ``charge_moves.charge`` operation for operation (IEEE doubles, same order)
and the share is ``drf.dominant_share``, so results are bit-identical to the reference's.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import numpy.typing as npt

from corral.master.allocator.drf import dominant_share
from corral.master.allocator.jit import compiled, helper, prefetch, python

AHEAD = 8  # agents


@helper
def fw_before(s1: float, c1: int, q1: int, s2: float, c2: int, q2: int) -> bool:
    """Does a framework keyed (share, count, id rank) s1, c1, q1 sort before one keyed
    s2, c2, q2? (order.py's keys 7-9, for both walks; keys, not the key arrays: an array
    passed to a compiled helper costs two atomic reference counts per call.)"""
    return s1 < s2 or (s1 == s2 and (c1 < c2 or (c1 == c2 and q1 < q2)))


def _walk(
    candidates: Any,
    free: Any,
    ok: Any,
    filtered: Any,
    buf: Any,
    size: int,
    share: Any,
    count: Any,
    rank: Any,
    alloc: Any,
    role_row: Any,
    total: Any,
    cols: Any,
    used: Any,
    out_i: Any,
    out_f: Any,
) -> int:
    start = 0
    end = size
    n = 0
    for i in range(candidates.shape[0]):
        a = candidates[i]
        if i + AHEAD < candidates.shape[0]:
            # Agents come in a random order, so each one's rows are cache misses: ask for those
            # of the agent AHEAD places on now (``jit.prefetch``). Charged frameworks move to
            # the back, so that agent will likely go to about the AHEAD-th framework in order.
            b = candidates[i + AHEAD]
            prefetch(used, b, 0)
            for j in range(start + AHEAD - 1, min(end, start + AHEAD + 2)):
                prefetch(ok, b, buf[j])
                prefetch(filtered, b, buf[j])
        pos = -1
        for j in range(start, end):
            g = buf[j]
            if ok[a, g] and not filtered[a, g]:
                pos = j
                break
        if pos < 0:
            continue
        f = buf[pos]
        for k in range(4):
            x = free[i, k]
            alloc[f, k] += x
            role_row[k] += x
            used[a, k] += x
        s = dominant_share(alloc, f, total, cols)
        share[f] = s
        count[f] += 1
        got = count[f]
        q = rank[f]
        # Take f out by shifting the entries before it right by one.
        for j in range(pos, start, -1):
            buf[j] = buf[j - 1]
        start += 1
        # Its new place: the first entry after the old place with a larger key.
        lo = pos + 1
        hi = end
        while lo < hi:
            mid = (lo + hi) >> 1
            g = buf[mid]
            if fw_before(share[g], count[g], rank[g], s, got, q):
                lo = mid + 1
            else:
                hi = mid
        for j in range(end, lo, -1):
            buf[j] = buf[j - 1]
        buf[lo] = f
        end += 1
        out_i[n] = i
        out_f[n] = f
        n += 1
    return n


walk_kernel = compiled(_walk)


def walk(
    candidates: npt.NDArray[np.intp],
    free: npt.NDArray[np.float64],
    ok: npt.NDArray[np.bool_],
    filtered: npt.NDArray[np.bool_],
    order: npt.NDArray[np.intp],
    share: npt.NDArray[np.float64],
    count: npt.NDArray[np.int64],
    rank: npt.NDArray[np.int64],
    alloc: npt.NDArray[np.float64],
    role_row: npt.NDArray[np.float64],
    total: npt.NDArray[np.float64],
    cols: npt.NDArray[np.intp],
    used: npt.NDArray[np.float64],
    uncompiled: bool = False,
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """(candidate index, framework) per offer, in walk order. ``order`` holds the active
    frameworks sorted by (share, count, rank); the three are indexed by framework row.
    Charges ``alloc``, ``count``, ``role_row`` and ``used`` in place; ``uncompiled``: the
    kernel's own source runs, by the interpreter (the numpy allocator)."""
    n = len(candidates)
    buf = np.empty(len(order) + n + 1, dtype=np.intp)
    buf[: len(order)] = order
    out_i = np.empty(n, dtype=np.intp)
    out_f = np.empty(n, dtype=np.intp)
    kernel = python(walk_kernel) if uncompiled else walk_kernel
    got = kernel(
        candidates, free, ok, filtered, buf, len(order), share, count, rank, alloc, role_row,
        total, cols, used, out_i, out_f,
    )  # fmt: skip
    return out_i[:got], out_f[:got]


@functools.cache  # once per process
def warm() -> None:
    """Compile (or load from numba's cache) before the first cycle, so that cycle is not the one
    that pays for it."""
    ok = np.ones((1, 1), dtype=np.bool_)
    walk(
        np.zeros(1, dtype=np.intp),
        np.ones((1, 4)),
        ok,
        ~ok,
        np.zeros(1, dtype=np.intp),
        np.zeros(1),
        np.zeros(1, dtype=np.int64),
        np.zeros(1, dtype=np.int64),
        np.zeros((1, 4)),
        np.zeros(4),
        np.ones(4),
        np.zeros(1, dtype=np.intp),
        np.zeros((1, 4)),
    )
