"""Which agents one task of a shape fits on, per (shape, role), kept across charges.

``Allocator.room`` tests the shape against every live agent (a resource at a time, the scarcest
first); gangs cut in one tick share that test. A charge only shrinks an agent's free room, so
after one the cache re-tests just that agent in each entry and drops it if the shape no longer
fits: a tick that cuts a hundred bundles tests 10,000 agents once per shape, not once per
bundle. Anything that can grow free room (a recovery, a new agent, the walk's charges) clears it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from corral.master.allocator.interface import Scalars

Key = tuple[Scalars, int]  # (one task's shape, role row)
Rows = npt.NDArray[np.intp]
Ids = npt.NDArray[np.object_]
Mask = npt.NDArray[np.bool_]


@dataclass(slots=True)
class _Entry:
    rows: Rows  # agent rows the shape fit on when tested, in id order
    ids: Ids
    fits: Mask  # still fits, per position (charges turn entries off)
    position: npt.NDArray[np.intp]  # agent row -> position in rows, -1 if absent


class FitCache:
    def __init__(self) -> None:
        self._entries: dict[Key, _Entry] = {}

    def get(self, key: Key) -> tuple[Rows, Ids, Mask] | None:
        e = self._entries.get(key)
        return None if e is None else (e.rows, e.ids, e.fits)

    def put(self, key: Key, rows: Rows, ids: Ids, agents: int) -> tuple[Rows, Ids, Mask]:
        position = np.full(agents, -1, dtype=np.intp)
        position[rows] = np.arange(len(rows), dtype=np.intp)
        e = _Entry(rows, ids, np.ones(len(rows), dtype=np.bool_), position)
        self._entries[key] = e
        return e.rows, e.ids, e.fits

    def charged(self, agent: int, still_fits: Callable[[Scalars, int, int], bool]) -> None:
        """Agent row ``agent`` was charged: re-test it where it is cached as fitting."""
        for (shape, role), e in self._entries.items():
            if agent < len(e.position):
                i = int(e.position[agent])
                if i >= 0 and e.fits[i] and not still_fits(shape, role, agent):
                    e.fits[i] = False

    def clear(self) -> None:
        self._entries.clear()
