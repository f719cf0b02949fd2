"""Where one task of a shape fits, per (shape, role), kept across charges: the agents it fits
on, how many tasks each holds (its *slots*), and those agents by most slots first.

``Allocator.room`` tests a shape against every live agent; a tick that cuts a hundred gang
bundles asks for the same shape a hundred times with a charge or two between. A charge only
shrinks one agent's free room, so the cache recomputes that agent's slots and moves it in the
order, and a room asked with ``want`` (gangs.py: members to place) gathers the framework's
eligibility only for the agents at the head of the order, until ``want`` slots are found.
A cycle's walk recounts the agents it charged, and resources coming back (declines, task
ends) recount the agents they come back to, so the cache outlives a tick; a batch of more than
RECOUNT agents, a new or removed agent, or an agent that starts to fit a shape it did not when
the entry was made, clears it (or the entry).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from corral.master.allocator import rooms_compiled
from corral.master.allocator.interface import Scalars, slots, slots_of_one
from corral.resources import fits

Key = tuple[Scalars, int]  # (one task's shape, role row)
Rows = npt.NDArray[np.intp]
Ids = npt.NDArray[np.object_]


MOVED = 1024  # agents re-placed since the order was sorted; one more re-sorts it
RECOUNT = 64  # agents charged or returned at once, recounted one by one; more: forget all
Free = Callable[[int, int], npt.NDArray[np.float64]]  # (agent row, role row) -> free now


@dataclass(slots=True)
class Entry:
    """The order is two sorted lists merged when read (rooms_compiled.head): ``order`` as sorted
    when the entry was made or last re-sorted, with the positions ``gone`` from it skipped,
    and ``moved``, the agents a charge re-placed since, by their new keys. A charge then
    shifts a few moved agents, not up to every agent of a 10k-agent order."""

    rows: Rows  # agent rows the shape fit on when tested, in id order
    ids: Ids
    fits: npt.NDArray[np.bool_]  # room's fit test per position, redone after a charge
    per: npt.NDArray[np.int64]  # slots per position (a charge lowers them)
    order: npt.NDArray[np.intp]  # positions by most slots first, then id order (when sorted)
    keys: npt.NDArray[np.int64]  # the order's sort keys, ascending
    position: npt.NDArray[np.intp]  # agent row -> position in rows, -1 if absent
    gone: npt.NDArray[np.bool_]  # per position: moved out of ``order``
    moved: npt.NDArray[np.intp]  # [MOVED] positions re-placed since, by key; the first...
    moved_keys: npt.NDArray[np.int64]
    n_moved: npt.NDArray[np.int64]  # [1]: ...this many
    asked: bool = True  # asked for since the last sweep

    def move(self, i: int, per: int) -> None:
        """Position ``i`` now holds ``per`` slots: re-place it (one compiled call, no new
        arrays: a tick charges thousands of times); re-sort when ``moved`` is full."""
        if not rooms_compiled.move(
            self.keys, self.per, self.gone, self.moved, self.moved_keys, self.n_moved, i, per
        ):
            self.per[i] = per
            self.sort()

    def sort(self) -> None:
        """One sorted order again, nothing moved."""
        m = len(self.per)
        keys = -self.per * (m + 1) + np.arange(m, dtype=np.int64)
        order = np.argsort(keys, kind="stable").astype(np.intp)
        self.order, self.keys = order, keys[order]
        self.gone[:] = False
        self.n_moved[0] = 0

    def ordered(self) -> npt.NDArray[np.intp]:
        """The positions in order, merged (tests read it; rooms walk it compiled)."""
        n = int(self.n_moved[0])
        keys = np.concatenate([self.keys[~self.gone[self.order]], self.moved_keys[:n]])
        both = np.concatenate([self.order[~self.gone[self.order]], self.moved[:n]])
        return both[np.argsort(keys, kind="stable")]


class FitCache:
    def __init__(self) -> None:
        self._entries: dict[Key, Entry] = {}

    def get(self, key: Key) -> Entry | None:
        e = self._entries.get(key)
        if e is not None:
            e.asked = True
        return e

    def sweep(self) -> None:
        """Forget the entries nobody asked for since the last sweep (once per cycle): every
        charge recounts the agent in each entry that holds it, so a shape asked once (a
        gang that has since started, an explain) should not cost every later charge."""
        for key, e in list(self._entries.items()):
            if e.asked:
                e.asked = False
            else:
                del self._entries[key]

    def put(
        self, key: Key, rows: Rows, ids: Ids, free: npt.NDArray[np.float64], agents: int
    ) -> Entry:
        """``free``: the rows' free resources for the role (unreserved plus its reserved)."""
        per = slots(free, key[0])
        m = len(rows)
        keys = -per * (m + 1) + np.arange(m, dtype=np.int64)
        order = np.argsort(keys, kind="stable").astype(np.intp)
        position = np.full(agents, -1, dtype=np.intp)
        position[rows] = np.arange(m, dtype=np.intp)
        e = Entry(
            rows, ids, np.ones(m, dtype=np.bool_), per, order, keys[order], position,
            np.zeros(m, dtype=np.bool_), np.zeros(MOVED, dtype=np.intp),
            np.zeros(MOVED, dtype=np.int64), np.zeros(1, dtype=np.int64),
        )  # fmt: skip
        self._entries[key] = e
        return e

    def charged(self, agent: int, free: Free) -> None:
        """Agent row ``agent`` was charged: redo its fit test and recount its slots where it
        is cached. ``free(agent, role)``: its free resources for the role now."""
        by_role: dict[int, list[float]] = {}  # entries of one role share the agent's free
        for (shape, role), e in self._entries.items():
            if agent < len(e.position):
                i = int(e.position[agent])
                if i >= 0 and e.fits[i]:
                    now = by_role.get(role)
                    if now is None:
                        now = by_role[role] = free(agent, role).tolist()
                    e.fits[i] = fits(now, shape)
                    e.move(i, slots_of_one(now, shape))

    def charged_many(self, agents: Rows, free: Free) -> None:
        """``charged`` for each of ``agents`` (a cycle's plan: the walk charged in place);
        past RECOUNT distinct agents, forget everything instead (a recount each costs more)."""
        for a in self._to_recount(agents):
            self.charged(a, free)

    def returned(self, agents: Rows, free: Free) -> None:
        """Resources came back to ``agents``: their slots grow. Recount each where it is
        cached; an agent that failed an entry's fit test when it was made and fits now is
        missing from it, so that entry is dropped (made afresh when next asked). Past
        RECOUNT distinct agents (a batch of declines), forget everything."""
        rows = self._to_recount(agents)
        for key, e in list(self._entries.items()):
            shape, role = key
            for a in rows:
                i = int(e.position[a]) if a < len(e.position) else -1
                now = free(a, role).tolist()
                fit = fits(now, shape)
                if i < 0:
                    if fit:
                        del self._entries[key]
                        break
                    continue
                e.fits[i] = fit
                e.move(i, slots_of_one(now, shape))

    def _to_recount(self, agents: Rows) -> list[int]:
        """The distinct ``agents`` to recount one by one: none when nothing is cached; none
        either past RECOUNT of them, having forgotten everything (a recount each costs more)."""
        if not self._entries or not len(agents):
            return []
        rows: list[int] = np.unique(agents).tolist()
        if len(rows) > RECOUNT:
            self.clear()
            return []
        return rows

    def clear(self) -> None:
        self._entries.clear()
