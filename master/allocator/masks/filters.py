"""Refuse filters from DECLINE (and an accept's unused part), as Mesos' RefusedOfferFilter.

A filter on (agent a, framework f) remembers what f refused and until when. It blocks offers of
a to f until it expires, or until a's free resources grow to more than f refused in some
resource (a task ended, another framework declined): then f is offered the larger amount at
once instead of waiting out the filter. The newest refusal of a pair replaces the amount it
remembers; the expiry is the later of the two.

Storage, dense per pair because a cluster that declines everything filters every pair:
``until[a, f]`` the exact expiry (float64, 0 = none: expiries are clock readings, after the
epoch, so a zero never holds; zeros make room reserved ahead free until a row is written, the
memory's pages the system's zeros, ``Allocator.reserve``); ``active`` the boolean view the cycle
reads, valid while ``now < next_expiry``; ``snap[a, f]`` (1 byte) an index into agent a's few
distinct refused amounts (``snapshots[a]``: a pair refuses what the agent had free, and many
frameworks refuse the same amount). ``floor[a]`` is at most every amount a filter on a
remembers, so a return of resources that leaves a's free within it lifts nothing, and costs one
comparison instead of a walk over a's filters.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
import numpy.typing as npt

from corral.master.allocator.growable import grow_matrix, grow_rows
from corral.master.allocator.jit import compiled
from corral.master.allocator.options import REASON_FILTER
from corral.resources import EPSILON

REASON = REASON_FILTER
_SLOTS = 255  # distinct refused amounts per agent; index _SLOTS: refuses everything
EVERYTHING_SLOT = _SLOTS
_EVERYTHING = np.full(4, np.inf)
NO_FILTER = 0.0  # ``until`` of a pair without a filter (the module's docstring)


class FilterMatrix:
    def __init__(self, agents: int, frameworks: int) -> None:
        self.until = np.zeros((agents, frameworks), dtype=np.float64)  # NO_FILTER
        self.active = np.zeros((agents, frameworks), dtype=np.bool_)
        self.snap = np.zeros((agents, frameworks), dtype=np.uint8)
        self.floor = np.full((agents, 4), np.inf, dtype=np.float64)
        self.snapshots: dict[int, list[tuple[float, ...]]] = {}
        self._slots: dict[int, dict[tuple[float, ...], int]] = {}  # amount -> index, per agent
        self.next_expiry = math.inf
        self.swept_at = -math.inf  # when ``active`` was last rebuilt from the expiries

    def current(self, now: float) -> bool:
        """``active`` is exactly ``until > now``: no filter has expired since the last sweep
        (now < next_expiry) and ``now`` is not before it (a filter that expired at the sweep
        is inactive, though its expiry may be later than an earlier ``now``). Every write
        keeps the two together otherwise: an add sets both and lowers next_expiry, a lift or
        clear drops both."""
        return self.swept_at <= now < self.next_expiry

    def grow(self, agents: int, frameworks: int) -> None:
        self.until = grow_matrix(self.until, agents, frameworks, NO_FILTER)
        self.active = grow_matrix(self.active, agents, frameworks, False)
        self.snap = grow_matrix(self.snap, agents, frameworks, 0)
        self.floor = grow_rows(self.floor, agents, np.inf)

    def _slot(self, agent: int, refused: tuple[float, ...] | None) -> int:
        """The snapshot index of ``refused`` on the agent (None: refuses everything)."""
        if refused is None:
            return _SLOTS
        index = self._slots.setdefault(agent, {})
        slot = index.get(refused)
        if slot is not None:
            return slot
        if len(index) >= _SLOTS:
            self._compact(agent)
            index = self._slots[agent]
            if len(index) >= _SLOTS:
                return _SLOTS  # more distinct refusals than slots: block until it expires
        known = self.snapshots.setdefault(agent, [])
        known.append(refused)
        index[refused] = len(known) - 1
        return len(known) - 1

    def _compact(self, agent: int) -> None:
        """Drop the agent's refused amounts no live filter points at; renumber the rest."""
        known = self.snapshots.get(agent, [])
        live = self.active[agent] & (self.snap[agent] < _SLOTS)
        used = np.unique(self.snap[agent][live])
        mapping = np.full(_SLOTS + 1, _SLOTS, dtype=np.uint8)
        mapping[used] = np.arange(len(used), dtype=np.uint8)
        self.snap[agent] = mapping[self.snap[agent]]
        kept = [known[i] for i in used.tolist()]
        self.snapshots[agent] = kept
        self._slots[agent] = {amount: i for i, amount in enumerate(kept)}

    def add(
        self, agent: int, framework: int, expires_at: float, refused: tuple[float, ...] | None
    ) -> bool:
        """Install (or renew) a filter; True if the pair was not filtered before."""
        slot = self._slot(agent, refused)
        self.snap[agent, framework] = slot
        amount = _EVERYTHING if slot == _SLOTS else np.asarray(self.snapshots[agent][slot])
        np.minimum(self.floor[agent], amount, out=self.floor[agent])
        self.until[agent, framework] = max(self.until[agent, framework], expires_at)
        self.next_expiry = min(self.next_expiry, expires_at)
        was = bool(self.active[agent, framework])
        self.active[agent, framework] = True
        return not was

    def grown_past_floor(
        self,
        agents: npt.NDArray[np.intp],
        capacity: npt.NDArray[np.float64],
        used: npt.NDArray[np.float64],
        reserved_free: npt.NDArray[np.float64],
    ) -> npt.NDArray[np.intp]:
        """Of ``agents`` (resources just returned to them; repeats allowed), those where some
        filter may have to lift: their free, unreserved (capacity - used, at least 0) plus
        ``reserved_free``, is past the floor of what their filters refused. Sorted, each agent
        once. One compiled pass: a batch of declines returns hundreds of agents, and gathering,
        comparing and de-duplicating them with numpy calls was ~70 µs per batch that usually
        lifts nothing."""
        hits = _past_floor(agents, capacity, used, reserved_free, self.floor)
        return np.unique(hits) if len(hits) > 1 else hits

    def lift(self, agent: int, free: npt.NDArray[np.float64], m: int) -> npt.NDArray[np.intp]:
        """Drop the agent's filters that refused less than ``free`` in some resource; returns
        the frameworks no longer filtered. Recomputes the agent's floor."""
        cols = np.flatnonzero(self.active[agent, :m])
        if not len(cols):
            self.floor[agent] = np.inf
            return cols
        known = self.snapshots.get(agent, [])
        table = np.vstack([np.asarray(known, dtype=np.float64).reshape(-1, 4), _EVERYTHING])
        slots = self.snap[agent, cols].astype(np.intp)
        slots[slots >= len(known)] = len(known)  # the "everything" row
        amounts = table[slots]
        # Grown: the refused amount no longer covers what is free (corral.resources.covers,
        # inverted, a row per filter; free and refused are never below zero).
        grown = (free > amounts + EPSILON).any(axis=1)
        gone: npt.NDArray[np.intp] = cols[grown]
        self.active[agent, gone] = False
        self.until[agent, gone] = NO_FILTER
        kept = amounts[~grown]
        self.floor[agent] = kept.min(axis=0) if len(kept) else np.inf
        return gone

    def expire(self, now: float) -> bool:
        """Drop the filters expired at ``now``; True if the boolean view was rebuilt."""
        if now < self.next_expiry:
            return False
        np.greater(self.until, now, out=self.active)
        self.swept_at = now
        pending = self.until[self.active]
        self.next_expiry = float(pending.min()) if pending.size else math.inf
        return True

    def clear_agent(self, agent: int) -> None:
        self.until[agent] = NO_FILTER
        self.active[agent] = False
        self.snap[agent] = 0
        self.floor[agent] = np.inf
        self.snapshots.pop(agent, None)
        self._slots.pop(agent, None)

    def clear_framework(self, framework: int) -> npt.NDArray[np.bool_]:
        """Drop a framework's filters; returns which agents were filtered."""
        was = self.active[:, framework].copy()
        self.until[:, framework] = NO_FILTER
        self.active[:, framework] = False
        return was

    def at(self, framework: int, now: float) -> npt.NDArray[np.bool_]:
        """Agents filtered for the framework at an arbitrary ``now`` (explain)."""
        return np.asarray(self.until[:, framework] > now)


@compiled
def _past_floor(agents: Any, capacity: Any, used: Any, reserved: Any, floor: Any) -> Any:
    """The entries of ``agents`` whose free resources exceed their floor by more than
    EPSILON somewhere (``lift``'s test against the least any filter refused)."""
    out = np.empty(agents.shape[0], dtype=np.intp)
    n = 0
    for i in range(agents.shape[0]):
        a = agents[i]
        for c in range(4):
            free = max(capacity[a, c] - used[a, c], 0.0) + reserved[a, c]
            if free > floor[a, c] + EPSILON:
                out[n] = a
                n += 1
                break
    return out[:n]


@functools.cache  # once per process
def warm() -> None:
    """Compile (or load from numba's cache) the growth test before the first return needs it."""
    one = np.zeros(1, dtype=np.intp)
    _past_floor(one, np.ones((1, 4)), np.zeros((1, 4)), np.zeros((1, 4)), np.ones((1, 4)))
