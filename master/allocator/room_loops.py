"""The loops of a gang room and its fit cache, compiled with numba (jit.py; plain Python
without it, with the same decisions).

A tick that cuts a hundred gang bundles asks for the head of a room and charges a slot or
two per bundle, a hundred times. Written with numpy, each step is a dozen array calls on a
handful of agents, and their call overhead (~1-3 µs each) was most of a bundle's cost. Here
each step is one call:

- ``head``: walk the fit cache's order (most slots first) and take the agents framework row
  f may be offered until ``want`` slots are found: ``rooms._head``'s chunked gathers, agent
  by agent, stopping at the first agent that completes the count.
- ``any_eligible``: is any agent of the cached fit test one framework row f may be offered
  (the why-pending scan's fast test), stopping at the first.
- ``move``: re-place one agent in the order after a charge changed its slots.

The eligibility asked is ``eligibility.at``'s, read from the same three arrays (placement,
the filters' expiries, draining); tests/unit/test_fit_cache.py and the allocator property
tests hold the head equal to the whole room's cut.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from corral.master.allocator.jit import compiled


@compiled
def head(
    order: Any,
    fits: Any,
    per: Any,
    rows: Any,
    ok: Any,
    until: Any,
    draining: Any,
    f: int,
    now: float,
    want: int,
    out: Any,
) -> int:
    """Positions of the first agents in ``order`` with a slot that framework row ``f`` may be
    offered, until they hold ``want`` slots, written to ``out``; returns how many, or -1 when
    all of them hold fewer than ``want``."""
    have = 0
    k = 0
    for j in range(order.shape[0]):
        i = order[j]
        p = per[i]
        if p <= 0:
            break  # most slots first: no agent after this one has a slot
        if not fits[i]:
            continue
        a = rows[i]
        if draining[a] or until[a, f] > now or not ok[a, f]:
            continue
        out[k] = i
        k += 1
        have += p
        if have >= want:
            return k
    return -1


@compiled
def any_eligible(
    fits: Any, rows: Any, ok: Any, until: Any, draining: Any, f: int, now: float
) -> bool:
    """Some position that passed the fit test holds an agent framework row ``f`` may be
    offered at ``now``."""
    for i in range(rows.shape[0]):
        if not fits[i]:
            continue
        a = rows[i]
        # The filter first: a framework that declined everything is filtered on every
        # agent, and each test is a read far from the last (one column of a wide matrix).
        if not draining[a] and until[a, f] <= now and ok[a, f]:
            return True
    return False


@compiled
def move(order: Any, keys: Any, per: Any, i: int, new: int) -> None:
    """Position ``i`` now holds ``new`` slots: shift the agents between its old and new place
    in the order (by key ``-slots * (m + 1) + position``, ascending) and put it there."""
    if per[i] == new:
        return
    m = per.shape[0]
    old_key = -per[i] * (m + 1) + i
    at = np.searchsorted(keys, old_key)
    per[i] = new
    k = -new * (m + 1) + i
    to = np.searchsorted(keys, k)
    if to > at:  # fewer slots: later in the order
        for j in range(at, to - 1):
            order[j] = order[j + 1]
            keys[j] = keys[j + 1]
        order[to - 1] = i
        keys[to - 1] = k
    else:
        for j in range(at, to, -1):
            order[j] = order[j - 1]
            keys[j] = keys[j - 1]
        order[to] = i
        keys[to] = k


@functools.cache  # once per process
def warm() -> None:
    """Compile (or load from numba's cache) the loops before a tick needs them."""
    order = np.arange(2, dtype=np.intp)
    per = np.array([2, 1], dtype=np.int64)
    keys = -per * 3 + np.arange(2, dtype=np.int64)
    fits = np.ones(2, dtype=np.bool_)
    ok = np.ones((2, 1), dtype=np.bool_)
    until = np.full((2, 1), -np.inf)
    draining = np.zeros(2, dtype=np.bool_)
    out = np.zeros(2, dtype=np.intp)
    head(order, fits, per, order, ok, until, draining, 0, 0.0, 1, out)
    any_eligible(fits, order, ok, until, draining, 0, 0.0)
    move(order, keys, per, 0, 0)
