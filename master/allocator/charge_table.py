"""What each framework is charged on each agent: a hash table in two arrays.

A cycle charges thousands of (framework, agent) pairs and a batch of declines returns as many;
a dict of lists costs ~1 µs of Python per pair each way. Here the pairs live in an open-addressing
table (``keys`` int64, ``vals`` float64 [cap, 4], linear probing, backward-shift deletion so there
are no tombstones) and the batch operations are loops compiled with numba.

The loops are written in the subset of Python numba compiles, so without numba they run as plain
Python (slowly, but the same decisions): ``COMPILED`` says which. The hash uses only products
below 2**63, so it is the same compiled or not.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from corral.master.allocator.interface import PAIR_FW_BITS, PAIR_FW_MASK
from corral.master.allocator.jit import AVAILABLE, compiled, prefetch

COMPILED = AVAILABLE
EMPTY = -1
_FW_BITS = PAIR_FW_BITS  # the pair key (interface.py): (agent row << _FW_BITS) | framework row
_FW_MASK = PAIR_FW_MASK
_MAX_LOAD = 0.5
_AHEAD = 8  # pairs (see _add)


@compiled
def _home(key: int, mask: int) -> int:
    h = key ^ (key >> 29)
    h = ((h & 0xFFFFFFFF) * 0x45D9F3B) & 0xFFFFFFFF
    h = h ^ (h >> 16)
    h = (h * 0x45D9F3B) & 0xFFFFFFFF
    h = h ^ (h >> 16)
    return h & mask


@compiled
def _key(agent: int, framework: int) -> int:
    return (agent << _FW_BITS) | framework


@compiled
def _find(keys: Any, key: int) -> int:
    """The slot holding ``key``, or -1 - (the empty slot where it would go)."""
    mask = keys.shape[0] - 1
    i = _home(key, mask)
    while True:
        k = keys[i]
        if k == key:
            return i
        if k == EMPTY:
            return -1 - i
        i = (i + 1) & mask


@compiled
def _delete(keys: Any, vals: Any, slot: int) -> None:
    mask = keys.shape[0] - 1
    i = slot
    j = slot
    while True:
        j = (j + 1) & mask
        k = keys[j]
        if k == EMPTY:
            break
        home = _home(k, mask)
        # Entry j may move into the hole at i unless its home lies cyclically in (i, j].
        if (i <= j and i < home <= j) or (i > j and (home > i or home <= j)):
            continue
        keys[i] = k
        for c in range(4):
            vals[i, c] = vals[j, c]
        i = j
    keys[i] = EMPTY


@compiled
def _add(keys: Any, vals: Any, fs: Any, agents: Any, amounts: Any) -> int:
    """Add ``amounts[n]`` to pair (fs[n], agents[n]); returns how many pairs are new."""
    new = 0
    mask = keys.shape[0] - 1
    for n in range(fs.shape[0]):
        if n + _AHEAD < fs.shape[0]:
            # Pairs hash to random slots: ask for the slot of the pair _AHEAD on now.
            ahead = _home(_key(agents[n + _AHEAD], fs[n + _AHEAD]), mask)
            prefetch(keys, ahead, 0)
            prefetch(vals, ahead, 0)
        key = _key(agents[n], fs[n])
        slot = _find(keys, key)
        if slot < 0:
            slot = -1 - slot
            keys[slot] = key
            for c in range(4):
                vals[slot, c] = 0.0
            new += 1
        for c in range(4):
            vals[slot, c] = vals[slot, c] + amounts[n, c]
    return new


@compiled
def _take(keys: Any, vals: Any, fs: Any, agents: Any, amounts: Any, back: Any) -> int:
    """Take back up to ``amounts[n]`` of each pair's charge, in order: ``back[n]`` gets what was
    taken (NaN in column 0 if the pair has no charge). A pair left with nothing positive is
    dropped. Returns how many pairs were dropped."""
    dropped = 0
    for n in range(fs.shape[0]):
        key = _key(agents[n], fs[n])
        slot = _find(keys, key)
        if slot < 0:
            back[n, 0] = np.nan
            continue
        positive = False
        for c in range(4):
            b = min(amounts[n, c], vals[slot, c])
            back[n, c] = b
            left = vals[slot, c] - b
            vals[slot, c] = left
            if left > 0:
                positive = True
        if not positive:
            _delete(keys, vals, slot)
            dropped += 1
    return dropped


@compiled
def _give_back(
    fs: Any, agents: Any, back: Any, alloc: Any, fw_role: Any, role_alloc: Any, used: Any
) -> None:
    """What ``_take`` took goes back from the framework's and role's allocation and the agent's
    unreserved use, in order (the path for agents without reservations)."""
    for n in range(fs.shape[0]):
        if np.isnan(back[n, 0]):
            continue
        f = fs[n]
        a = agents[n]
        r = fw_role[f]
        for c in range(4):
            b = back[n, c]
            alloc[f, c] = alloc[f, c] - b
            role_alloc[r, c] = role_alloc[r, c] - b
            u = used[a, c]
            used[a, c] = u - min(b, u)


@compiled
def _charge_one(
    keys: Any,
    vals: Any,
    alloc: Any,
    role_alloc: Any,
    used: Any,
    fw_count: Any,
    role_count: Any,
    f: int,
    a: int,
    r: int,
    x0: float,
    x1: float,
    x2: float,
    x3: float,
    res0: float,
    res1: float,
    res2: float,
    res3: float,
) -> int:
    """One charge of (x0..x3) to framework row f (role row r) on agent row a, of which
    (res0..res3) came out of the role's reservation: the pair's charge, the framework's and
    role's allocation and counts, and the agent's unreserved use, as ``_add`` and the
    allocator's per-charge arithmetic do (same operations, same order). Returns 1 if the
    pair is new."""
    key = _key(a, f)
    slot = _find(keys, key)
    new = 0
    if slot < 0:
        slot = -1 - slot
        keys[slot] = key
        for c in range(4):
            vals[slot, c] = 0.0
        new = 1
    xs = (x0, x1, x2, x3)
    rs = (res0, res1, res2, res3)
    for c in range(4):
        x = xs[c]
        vals[slot, c] = vals[slot, c] + x
        alloc[f, c] = alloc[f, c] + x
        role_alloc[r, c] = role_alloc[r, c] + x
        used[a, c] = used[a, c] + x - rs[c]
    fw_count[f] += 1
    role_count[r] += 1
    return new


class ChargeBook:
    """Charges by (framework row, agent row): four floats each, positive somewhere."""

    def __init__(self, capacity: int = 1024) -> None:
        cap = 1 << max(4, (capacity - 1).bit_length())
        self.keys = np.full(cap, EMPTY, dtype=np.int64)
        self.vals = np.zeros((cap, 4))
        self.size = 0

    def __len__(self) -> int:
        return self.size

    def _reserve(self, more: int) -> None:
        need = self.size + more
        if need <= _MAX_LOAD * len(self.keys):
            return
        cap = len(self.keys)
        while need > _MAX_LOAD * cap:
            cap *= 2
        live = self.keys != EMPTY
        keys, vals = self.keys[live], self.vals[live]
        self.keys = np.full(cap, EMPTY, dtype=np.int64)
        self.vals = np.zeros((cap, 4))
        self.size = 0
        self.add(keys & _FW_MASK, keys >> _FW_BITS, vals)

    def add(
        self,
        frameworks: npt.NDArray[np.intp] | npt.NDArray[np.int64],
        agents: npt.NDArray[np.intp] | npt.NDArray[np.int64],
        amounts: npt.NDArray[np.float64],
    ) -> None:
        """Charge ``amounts[n]`` to pair n (added to what the pair already has)."""
        self._reserve(len(frameworks))
        self.size += int(_add(self.keys, self.vals, frameworks, agents, amounts))

    def charge_one(
        self,
        f: int,
        a: int,
        r: int,
        amounts: Sequence[float],
        from_reserved: Sequence[float],
        arrays: tuple[Any, Any, Any, Any, Any],
    ) -> None:
        """One charge, with what follows from it in the allocator's ``arrays`` (alloc,
        role_alloc, used, fw_count, role_count): one compiled call instead of three arrays
        built for ``add`` and four row updates (a gang bundle charges one agent at a time)."""
        self._reserve(1)
        alloc, role_alloc, used, fw_count, role_count = arrays
        x0, x1, x2, x3 = amounts
        r0, r1, r2, r3 = from_reserved
        self.size += int(
            _charge_one(
                self.keys, self.vals, alloc, role_alloc, used, fw_count, role_count,
                f, a, r, x0, x1, x2, x3, r0, r1, r2, r3,
            )
        )  # fmt: skip

    def take(
        self,
        frameworks: npt.NDArray[np.intp],
        agents: npt.NDArray[np.intp],
        amounts: npt.NDArray[np.float64],
    ) -> npt.NDArray[np.float64]:
        """Take back up to ``amounts`` from each pair, in order; rows of NaN where a pair had no
        charge. A pair left with nothing positive is dropped."""
        back = np.zeros((len(frameworks), 4))
        self.size -= int(_take(self.keys, self.vals, frameworks, agents, amounts, back))
        return back

    def get(self, framework: int, agent: int) -> list[float] | None:
        slot = int(_find(self.keys, _key(agent, framework)))
        return None if slot < 0 else [float(x) for x in self.vals[slot]]

    def of_framework(self, framework: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """(agents, charges) of one framework, in slot order."""
        slots = np.flatnonzero((self.keys != EMPTY) & ((self.keys & _FW_MASK) == framework))
        return self.keys[slots] >> _FW_BITS, self.vals[slots].copy()

    def of_agent(self, agent: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """(frameworks, charges) on one agent, in slot order."""
        slots = np.flatnonzero((self.keys != EMPTY) & ((self.keys >> _FW_BITS) == agent))
        return self.keys[slots] & _FW_MASK, self.vals[slots].copy()

    def drop(self, frameworks: npt.NDArray[np.int64], agents: npt.NDArray[np.int64]) -> None:
        """Forget these pairs outright (their framework or agent is gone)."""
        if len(frameworks):
            self.take(frameworks, agents, np.full((len(frameworks), 4), np.inf))


def give_back(
    frameworks: npt.NDArray[np.intp],
    agents: npt.NDArray[np.intp],
    back: npt.NDArray[np.float64],
    alloc: npt.NDArray[np.float64],
    fw_role: npt.NDArray[np.intp],
    role_alloc: npt.NDArray[np.float64],
    used: npt.NDArray[np.float64],
) -> None:
    _give_back(frameworks, agents, back, alloc, fw_role, role_alloc, used)


@functools.cache  # once per process
def warm() -> None:
    """Compile (or load from numba's cache) every loop before the master needs one."""
    book = ChargeBook(16)
    one = np.zeros(1, dtype=np.intp)
    book.add(one, one, np.ones((1, 4)))
    back = book.take(one, one, np.ones((1, 4)))
    give_back(one, one, back, np.ones((1, 4)), one, np.ones((1, 4)), np.ones((1, 4)))
    counts = np.zeros(1, dtype=np.int64)
    book.charge_one(
        0, 0, 0, (1.0, 1.0, 0.0, 0.0), (0.0, 0.0, 0.0, 0.0),
        (np.zeros((1, 4)), np.zeros((1, 4)), np.zeros((1, 4)), counts, counts.copy()),
    )  # fmt: skip
