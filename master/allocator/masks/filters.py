"""Refuse filters from DECLINE: no offer of agent a to framework f while ``now < until[a, f]``.

``until`` holds the exact expiry (float64, -inf = none); ``active`` is the boolean view the cycle
reads, valid as long as ``now < next_expiry``. Filters are added far more often than they expire,
so the full re-evaluation happens only when the earliest expiry has passed.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from corral.master.allocator.growable import grow_cols, grow_rows
from corral.master.allocator.options import REASON_FILTER

REASON = REASON_FILTER


class FilterMatrix:
    def __init__(self, agents: int, frameworks: int) -> None:
        self.until = np.full((agents, frameworks), -np.inf, dtype=np.float64)
        self.active = np.zeros((agents, frameworks), dtype=np.bool_)
        self.next_expiry = math.inf

    def grow(self, agents: int, frameworks: int) -> None:
        self.until = grow_cols(grow_rows(self.until, agents, -np.inf), frameworks, -np.inf)
        self.active = grow_cols(grow_rows(self.active, agents, False), frameworks, False)

    def add(self, agent: int, framework: int, expires_at: float) -> bool:
        """Install (or extend) a filter; True if the pair was not filtered before."""
        if expires_at <= self.until[agent, framework]:
            return False
        self.until[agent, framework] = expires_at
        self.next_expiry = min(self.next_expiry, expires_at)
        was = bool(self.active[agent, framework])
        self.active[agent, framework] = True
        return not was

    def expire(self, now: float) -> bool:
        """Drop the filters expired at ``now``; True if the boolean view was rebuilt."""
        if now < self.next_expiry:
            return False
        np.greater(self.until, now, out=self.active)
        pending = self.until[self.active]
        self.next_expiry = float(pending.min()) if pending.size else math.inf
        return True

    def clear_agent(self, agent: int) -> None:
        self.until[agent] = -np.inf
        self.active[agent] = False

    def clear_framework(self, framework: int) -> npt.NDArray[np.bool_]:
        """Drop a framework's filters; returns which agents were filtered."""
        was = self.active[:, framework].copy()
        self.until[:, framework] = -np.inf
        self.active[:, framework] = False
        return was

    def at(self, framework: int, now: float) -> npt.NDArray[np.bool_]:
        """Agents filtered for the framework at an arbitrary ``now`` (explain)."""
        return np.asarray(self.until[:, framework] > now)
