"""Static reservations: per agent, per role, the reserved amount and how much of it is used.

Sparse (most agents reserve nothing), so plain dicts; ``free_sum[a]`` is the vector view the
cycle uses to skip agents with nothing to offer.
"""

from __future__ import annotations

from dataclasses import dataclass

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

    def set_used(self, arrays: ReservationArrays) -> None:
        """Write back what a walk charged to the reservations (its ``free_sum`` rows are
        already current: the walk keeps them)."""
        touched = np.flatnonzero(arrays.touched)
        for e in touched.tolist():
            a, r = int(arrays.agent[e]), int(arrays.role[e])
            amount, _ = self.by_agent[a][r]
            self.by_agent[a][r] = (amount, arrays.used[e].tolist())
        if len(touched):
            self._unallocated.clear()

    def agents_of(self, role: int) -> npt.NDArray[np.intp]:
        return np.asarray([a for a, p in self.by_agent.items() if role in p], dtype=np.intp)


@dataclass
class ReservationArrays:
    """The book as arrays, for a compiled walk: one entry per (agent, role) reservation, the
    entries of an agent contiguous (rows ascending, each agent's roles in the book's order, as
    ``free_sum`` adds them up), and per role its entries by agent row (as ``unallocated`` adds
    them up). ``used`` is written back with ``ReservationBook.set_used``."""

    agent: npt.NDArray[np.intp]
    role: npt.NDArray[np.intp]
    amount: npt.NDArray[np.float64]
    used: npt.NDArray[np.float64]
    first: npt.NDArray[np.intp]  # by agent row: its first entry, or -1
    count: npt.NDArray[np.intp]  # by agent row: how many entries
    role_ptr: npt.NDArray[np.intp]  # entries of role r: role_entries[role_ptr[r]:role_ptr[r+1]]
    role_entries: npt.NDArray[np.intp]
    touched: npt.NDArray[np.bool_]  # set by the walk on entries it charged


def to_arrays(book: ReservationBook, roles: int) -> ReservationArrays:
    agent: list[int] = []
    role: list[int] = []
    amount: list[Vec] = []
    used: list[Vec] = []
    for a in sorted(book.by_agent):
        for r, (amt, u) in book.by_agent[a].items():
            agent.append(a)
            role.append(r)
            amount.append(amt)
            used.append(u)
    n = len(agent)
    agents = np.asarray(agent, dtype=np.intp)
    role_of = np.asarray(role, dtype=np.intp)
    first = np.full(book.free_sum.shape[0], -1, dtype=np.intp)
    count = np.zeros(book.free_sum.shape[0], dtype=np.intp)
    if n:
        rows, starts, counts = np.unique(agents, return_index=True, return_counts=True)
        first[rows], count[rows] = starts, counts
    by_role = np.argsort(role_of, kind="stable").astype(np.intp)  # stable: agent rows ascending
    role_ptr = np.searchsorted(role_of[by_role], np.arange(roles + 1)).astype(np.intp)
    return ReservationArrays(
        agents,
        role_of,
        np.asarray(amount, dtype=np.float64).reshape(n, 4),
        np.asarray(used, dtype=np.float64).reshape(n, 4),
        first,
        count,
        role_ptr,
        by_role,
        np.zeros(n, dtype=np.bool_),
    )
