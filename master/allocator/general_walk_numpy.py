"""The general walk of the ``"numpy"`` kernel, in Python: what ``general_walk`` does compiled
with the ``"numba"`` kernel, for cycles the fast path does not take (several roles, a quota,
reservations or PreferNoSchedule taints on the candidates).

The rules kept (reference.py's CYCLE, one agent at a time): the agent's eligible frameworks are
ranked in DRF order (order.py, one ``lexsort`` per offer), the first whose offer
(``quota.offer``) is allocatable is charged and its keys recomputed as the reference recomputes
them; frameworks passed over stay passed over (a charge only shrinks their offers); the agent is
done when nothing allocatable could be left on it.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from corral.master.allocator import charge_moves, drf, eligibility, quota
from corral.master.allocator.fastpath import Walked
from corral.master.allocator.options import allocatable

if TYPE_CHECKING:
    from corral.master.allocator.numpy_allocator import DrfAllocator

Vec = list[float]
INF = math.inf


class Walk:
    """One cycle's DRF keys, updated after every charge as the reference recomputes them."""

    def __init__(self, alloc: DrfAllocator) -> None:
        self.a = alloc
        self.cols = drf.fair_columns(alloc.cluster, alloc._fair)
        self.total = alloc.cluster.tolist()
        self.tier, self.rkey, self.rrank = alloc.role_keys()
        self.fkey = drf.dominant_shares(alloc.alloc, alloc.cluster, self.cols)
        self.guarded = any(any(g > 0 for g in gs) for gs in alloc.guarantee)

    def serve(self, a: int, frameworks: npt.NDArray[np.intp]) -> list[tuple[int, Vec]]:
        """Offers of agent a, in order, to the eligible ``frameworks``."""
        out: list[tuple[int, Vec]] = []
        alloc = self.a
        soft = a if alloc.placement.has_soft_taints[a] else -1
        fs = frameworks
        while len(fs):
            ranked = alloc.rank(fs, self.fkey, (self.tier, self.rkey, self.rrank), soft)
            allowance = None if self.guarded else [INF] * 4
            chosen = -1
            for pos, f in enumerate(ranked.tolist()):
                offer = quota.offer(alloc, f, a, allowance)
                if allocatable(offer, alloc._min):
                    chosen = pos
                    break
            if chosen < 0:
                break
            f = int(ranked[chosen])
            charge_moves.charge(alloc, f, a, offer)
            out.append((f, offer))
            self._update(f)
            # Frameworks passed over stay passed over (a charge only shrinks their offers).
            fs = ranked[chosen + 1 :]
            if not self._has_more(a):
                break
        return out

    def _has_more(self, a: int) -> bool:
        """Could any framework still get an allocatable offer of agent a? (upper bound)"""
        alloc = self.a
        cap, used = alloc.capacity[a].tolist(), alloc.used[a].tolist()
        reserved = alloc.reservations.free_sum[a].tolist()
        most = [max(0.0, c - u) + r for c, u, r in zip(cap, used, reserved, strict=True)]
        return allocatable(most, alloc._min)

    def _update(self, f: int) -> None:
        alloc = self.a
        r = int(alloc.fw_role[f])
        self.fkey[f] = drf.dominant_share(alloc.alloc, f, self.total, self.cols)
        ralloc = alloc.role_alloc[r].tolist()
        self.rkey[r] = drf.dominant_share([ralloc], 0, self.total, self.cols) / alloc.weight[r]
        self.tier[r] = 0 if any(u > 0 for u in quota.unmet(alloc, r)) else 1


def walk(
    al: DrfAllocator,
    candidates: npt.NDArray[np.intp],
    active: npt.NDArray[np.intp],
    m: int,
    cpus: float,
    planned: float,
) -> Walked:
    """(frameworks, agents, offers) of the candidates in walk order for the framework rows
    ``active`` (the cycle's pass), stopping at the ``cpus`` budget, ``planned`` cpus being
    planned already; charges the allocator as it goes."""
    rows: list[tuple[int, int, Vec]] = []
    walk = Walk(al)
    in_pass = np.zeros(m, dtype=np.bool_)
    in_pass[active] = True
    for a in candidates.tolist():
        if planned >= cpus:
            break
        row = eligibility.row(al, a, m) & in_pass
        for f, offer in walk.serve(a, np.flatnonzero(row)):
            rows.append((f, a, offer))
            planned += offer[0]
    return Walked.of(rows)
