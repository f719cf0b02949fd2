"""Static reservations: per agent, per role, the reserved amount and how much of it is used.

Sparse (most agents reserve nothing), so plain dicts; ``free_sum[a]`` is the vector view the
cycle uses to skip agents with nothing to offer.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from corral.master.allocator.growable import grow_rows

Vec = list[float]


class ReservationBook:
    def __init__(self, agents: int) -> None:
        self.by_agent: dict[int, dict[int, tuple[Vec, Vec]]] = {}
        self.free_sum = np.zeros((agents, 4), dtype=np.float64)
        self._unallocated: dict[int, Vec] = {}  # by role, summed in agent order when asked

    def grow(self, agents: int) -> None:
        self.free_sum = grow_rows(self.free_sum, agents, 0.0)

    def set_agent(self, agent: int, reserved: dict[int, Vec]) -> None:
        if reserved:
            self.by_agent[agent] = {r: (list(v), [0.0] * 4) for r, v in reserved.items()}
        else:
            self.by_agent.pop(agent, None)
        self._refresh(agent)

    def drop_agent(self, agent: int) -> None:
        self.by_agent.pop(agent, None)
        self._unallocated.clear()
        self.free_sum[agent] = 0.0

    def free(self, agent: int, role: int) -> Vec:
        pools = self.by_agent.get(agent)
        if pools is None or role not in pools:
            return [0.0, 0.0, 0.0, 0.0]
        amount, used = pools[role]
        return [max(0.0, r - u) for r, u in zip(amount, used, strict=True)]

    def take(self, agent: int, role: int, amounts: Vec) -> Vec:
        """Charge ``amounts`` to the role's reservation as far as it goes; returns what it took."""
        pools = self.by_agent.get(agent)
        if pools is None or role not in pools:
            return [0.0, 0.0, 0.0, 0.0]
        took = [min(x, f) for x, f in zip(amounts, self.free(agent, role), strict=True)]
        amount, used = pools[role]
        pools[role] = (amount, [u + t for u, t in zip(used, took, strict=True)])
        self._refresh(agent)
        return took

    def give_back(self, agent: int, role: int, amounts: Vec) -> Vec:
        """Return up to ``amounts`` to the role's reservation; returns what it took back."""
        pools = self.by_agent.get(agent)
        if pools is None or role not in pools:
            return [0.0, 0.0, 0.0, 0.0]
        amount, used = pools[role]
        back = [min(b, u) for b, u in zip(amounts, used, strict=True)]
        pools[role] = (amount, [u - t for u, t in zip(used, back, strict=True)])
        self._refresh(agent)
        return back

    def unallocated(self, role: int) -> Vec:
        """The role's reserved resources that nobody is charged for, over all agents: part of
        its quota consumption (reference.py, SHARES)."""
        cached = self._unallocated.get(role)
        if cached is None:
            cached = [0.0, 0.0, 0.0, 0.0]
            for agent in sorted(a for a, pools in self.by_agent.items() if role in pools):
                cached = [c + f for c, f in zip(cached, self.free(agent, role), strict=True)]
            self._unallocated[role] = cached
        return cached

    def _refresh(self, agent: int) -> None:
        self._unallocated.clear()
        total = np.zeros(4)
        for role in self.by_agent.get(agent, {}):
            total += np.asarray(self.free(agent, role))
        self.free_sum[agent] = total

    def agents_of(self, role: int) -> npt.NDArray[np.intp]:
        return np.asarray([a for a, p in self.by_agent.items() if role in p], dtype=np.intp)
