"""The loops of a gang room and its fit cache, compiled with numba (jit.py; plain Python
without it, with the same decisions).

A tick that cuts a hundred gang bundles asks for the head of a room and charges a slot or
two per bundle, a hundred times. Written with numpy, each step is a dozen array calls on a
handful of agents, and their call overhead (~1-3 µs each) was most of a bundle's cost. Here
each step is one call:

- ``head``: walk the fit cache's order (most slots first: the sorted order less the agents
  moved out of it, merged with the moved ones, fit_cache.Entry) and take the agents framework
  row f may be offered until ``want`` slots are found: ``rooms._head``'s chunked gathers,
  agent by agent, stopping at the first agent that completes the count.
- ``any_eligible``: is any agent of the cached fit test one framework row f may be offered
  (the why-pending scan's fast test), stopping at the first. It reads the pairs' boolean mask
  (one byte per agent, not an eight-byte expiry: the column of a framework that declined
  everything is read ~3x faster).
- ``move``: re-place one agent after a charge changed its slots: out of the sorted order
  and into the short sorted list of moved agents. (Shifting it within the sorted order cost
  ~20 µs at 10k agents: a charged agent moves from the head past every agent of its old
  slot count.)

The eligibility asked is ``eligibility.at``'s, read from the arrays it combines: placement's
``ok``, the dynamic rules' blocked pairs and closed agents (eligibility.py, after the filters'
sweep); tests/unit/test_fit_cache.py and the allocator property tests hold the head equal to
the whole room's cut.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from corral.master.allocator.jit import compiled


@compiled
def head(
    order: Any,
    keys: Any,
    gone: Any,
    moved: Any,
    moved_keys: Any,
    n_moved: int,
    fits: Any,
    per: Any,
    rows: Any,
    ok: Any,
    blocked: Any,
    closed: Any,
    f: int,
    want: int,
    out: Any,
) -> int:
    """Positions of the first agents in the order (``order`` less ``gone`` merged with the
    first ``n_moved`` of ``moved``, by key) with a slot that framework row ``f`` may be
    offered, until they hold ``want`` slots, written to ``out``; returns how many, or -1
    when all of them hold fewer than ``want``."""
    have = 0
    k = 0
    m = order.shape[0]
    a = 0
    b = 0
    while True:
        while a < m and gone[order[a]]:
            a += 1
        if a < m and (b >= n_moved or keys[a] < moved_keys[b]):
            i = order[a]
            a += 1
        elif b < n_moved:
            i = moved[b]
            b += 1
        else:
            break
        p = per[i]
        if p <= 0:
            break  # most slots first: no agent after this one has a slot
        if not fits[i]:
            continue
        row = rows[i]
        if closed[row] or blocked[row, f] or not ok[row, f]:
            continue
        out[k] = i
        k += 1
        have += p
        if have >= want:
            return k
    return -1


@compiled
def any_eligible(fits: Any, rows: Any, ok: Any, blocked: Any, closed: Any, f: int) -> bool:
    """Some position that passed the fit test holds an agent framework row ``f`` may be
    offered (``closed`` agents, ``blocked`` pairs: the dynamic rules' masks)."""
    for i in range(rows.shape[0]):
        if not fits[i]:
            continue
        a = rows[i]
        if not closed[a] and not blocked[a, f] and ok[a, f]:
            return True
    return False


@compiled
def move(
    keys: Any, per: Any, gone: Any, moved: Any, moved_keys: Any, n_moved: Any, i: int, new: int
) -> bool:
    """Position ``i`` now holds ``new`` slots: take it out of the sorted order (``gone``) or
    out of ``moved``, and put it into ``moved`` by its new key (``-slots * (m + 1) +
    position``). False, changing nothing, when ``moved`` is full: the caller re-sorts."""
    if per[i] == new:
        return True
    m = per.shape[0]
    n = n_moved[0]
    if gone[i]:
        old = -per[i] * (m + 1) + i
        j = np.searchsorted(moved_keys[:n], old)
        for t in range(j, n - 1):
            moved[t] = moved[t + 1]
            moved_keys[t] = moved_keys[t + 1]
        n -= 1
    elif n >= moved.shape[0]:
        return False
    else:
        gone[i] = True
    per[i] = new
    k = -new * (m + 1) + i
    j = np.searchsorted(moved_keys[:n], k)
    for t in range(n, j, -1):
        moved[t] = moved[t - 1]
        moved_keys[t] = moved_keys[t - 1]
    moved[j] = i
    moved_keys[j] = k
    n_moved[0] = n + 1
    return True


@functools.cache  # once per process
def warm() -> None:
    """Compile (or load from numba's cache) the loops before a tick needs them."""
    order = np.arange(2, dtype=np.intp)
    per = np.array([2, 1], dtype=np.int64)
    keys = -per * 3 + np.arange(2, dtype=np.int64)
    fits = np.ones(2, dtype=np.bool_)
    ok = np.ones((2, 1), dtype=np.bool_)
    blocked = np.zeros((2, 1), dtype=np.bool_)
    closed = np.zeros(2, dtype=np.bool_)
    out = np.zeros(2, dtype=np.intp)
    gone = np.zeros(2, dtype=np.bool_)
    moved, moved_keys, n_moved = np.zeros(2, np.intp), np.zeros(2, np.int64), np.zeros(1, np.int64)
    move(keys, per, gone, moved, moved_keys, n_moved, 0, 0)
    head(
        order,
        keys,
        gone,
        moved,
        moved_keys,
        1,
        fits,
        per,
        order,
        ok,
        blocked,
        closed,
        0,
        1,
        out,
    )
    any_eligible(fits, order, ok, blocked, closed, 0)
