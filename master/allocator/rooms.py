"""Where one task of a shape could go for one framework now (``Allocator.room``): the agents it
fits on (cached per shape and role across charges, fit_cache.py) that the eligibility rule
(eligibility.py: the static rules and the dynamic rules rooms ask) lets the framework be
offered, with their free resources and the role's headroom. Asked with ``want``, only the head
of the room: the agents with the most slots, until ``want`` tasks fit (a gang cut of that many
takes the same agents from it as from the whole room)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

import numpy as np
import numpy.typing as npt

from corral.master.allocator import eligibility, order, quota, rooms_compiled
from corral.master.allocator.fit_cache import Entry
from corral.master.allocator.interface import Room, Scalars
from corral.resources import EPSILON, covers_array

if TYPE_CHECKING:
    from corral.master.allocator.arrays import AllocatorArrays

F64 = npt.NDArray[np.float64]
Mask = npt.NDArray[np.bool_]


def by_id(al: AllocatorArrays) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.object_]]:
    """The live agent rows in id order, and their ids (kept until the agents change)."""
    if al._agents_by_id is None:
        live = al._live_agents()
        table = al._agents.table()
        names = [table[a] for a in live.tolist()]
        at = np.array(order.name_order(names), dtype=np.intp)
        al._agents_by_id = live[at]
        # Ids as an array: a room picks its ids with one mask, not a loop.
        al._ids_by_id = np.array(names, dtype=object)[at]
    return al._agents_by_id, al._ids_by_id


def _entry(al: AllocatorArrays, r: int, shape: Scalars) -> tuple[Entry, F64 | None]:
    """The fit cache's entry for (shape, role row r), tested now if not cached, and the
    role's free reservations per agent row (None: no agent has reservations)."""
    n = al._agents.size
    reserved_all: F64 | None = None
    if al.reservations.by_agent:
        reserved_all = np.zeros((n, 4))
        for a, pools in al.reservations.by_agent.items():
            if r in pools and a < n:
                reserved_all[a] = al.reservations.free(a, r)
    key = ((shape[0], shape[1], shape[2], shape[3]), r)
    entry = al._fit_cache.get(key)
    if entry is None:
        # The fit test a resource at a time, the scarcest first (gpus, disk, mem, cpus),
        # each on the agents the previous left: a GPU gang on a CPU cluster gathers one
        # column.
        rows, ids = by_id(al)
        for k in (3, 2, 1, 0):
            need = shape[k]
            if need > 0 and len(rows):
                col = np.maximum(al.capacity[rows, k] - al.used[rows, k], 0.0)
                if reserved_all is not None:
                    col += reserved_all[rows, k]
                fits = covers_array(col, need)
                rows, ids = rows[fits], ids[fits]
        free = al._unreserved_free(rows)
        if reserved_all is not None:
            free = free + reserved_all[rows]
        entry = al._fit_cache.put(key, rows, ids, free, n)
    return entry, reserved_all


def _masks(al: AllocatorArrays, f: int, now: float) -> tuple[Mask, Mask] | None:
    """The dynamic rules rooms ask, at ``now`` (eligibility.py, after a sweep): (agents closed,
    pairs blocked), or None when a rule closes framework row f itself."""
    eligibility.sweep(al, now)
    if eligibility.closed_frameworks(al, now, rooms=True)[f]:
        return None
    return eligibility.closed_agents(al, now, rooms=True), eligibility.blocked_pairs(al, now, True)


def has_room(al: AllocatorArrays, f: int, now: float, shape: Scalars) -> bool:
    """``Allocator.has_room``: the room's test, stopping at its first agent."""
    masks = _masks(al, f, now)
    if masks is None:
        return False
    entry, _ = _entry(al, int(al.fw_role[f]), shape)
    closed, blocked = masks
    return bool(
        rooms_compiled.any_eligible(entry.fits, entry.rows, al.placement.ok, blocked, closed, f)
    )


def has_room_many(al: AllocatorArrays, f: int, now: float, shapes: Sequence[Scalars]) -> list[bool]:
    """``has_room`` for each of ``shapes`` at once, with no fit cache entry per shape: the
    framework's eligible agents' free rows for its role (the fit test's columns), each
    distinct row once, then every shape against those. A why-pending scan tests up to
    hundreds of shapes, most asked nowhere else (a demand that fits nowhere): one entry
    each over every agent cost ~0.2 ms a shape at 10k agents."""
    if not shapes:
        return []
    masks = _masks(al, f, now)
    if masks is None:
        return [False] * len(shapes)
    closed, blocked = masks
    r = int(al.fw_role[f])
    rows, _ = by_id(al)
    rows = rows[~closed[rows] & ~blocked[rows, f] & al.placement.ok[rows, f]]
    free = np.maximum(al.capacity[rows] - al.used[rows], 0.0)
    if al.reservations.by_agent:
        reserved = np.zeros((al._agents.size, 4))
        for a, pools in al.reservations.by_agent.items():
            if r in pools and a < len(reserved):
                reserved[a] = al.reservations.free(a, r)
        free += reserved[rows]
    # Agents mostly share a few free rows (equal machines, equal tasks): test each once.
    # (Sorted by a lexsort and compared with the next: np.unique(axis=0) costs 10x more.)
    if len(free) > 1:
        free = free[np.lexsort(free.T[::-1])]
        free = free[np.concatenate(([True], (free[1:] != free[:-1]).any(axis=1)))]
    need = np.asarray(shapes, dtype=np.float64).reshape(len(shapes), 4)
    out = np.zeros(len(shapes), dtype=np.bool_)
    step = max(1, (1 << 20) // max(1, len(free)))  # shapes x rows per step: bounded memory
    for lo in range(0, len(shapes), step):
        part = need[lo : lo + step, None, :]
        # covers (corral.resources) for every shape, row and resource at once.
        fits = (part <= 0) | (part <= free[None, :, :] + EPSILON)
        out[lo : lo + step] = fits.all(axis=2).any(axis=1)
    return [bool(x) for x in out]


def room(al: AllocatorArrays, f: int, now: float, shape: Scalars, want: int | None) -> Room:
    """``Allocator.room`` for framework row f (see ``Room``); with ``want``, the head of the
    room when it holds that many tasks (``Room.partial``)."""
    r = int(al.fw_role[f])
    masks = _masks(al, f, now)
    entry, reserved_all = _entry(al, r, shape)
    positions = None if want is None or masks is None else _head(al, entry, f, masks, want)
    if positions is None:  # the whole room
        positions = np.flatnonzero(entry.fits & eligibility.at(al, entry.rows, f, now))
        partial = False
    else:
        partial = True
    rows, ids = entry.rows[positions], entry.ids[positions]
    consumed = quota.consumption(al, r)
    allowance = quota.allowance(al, r, now)
    headroom = [
        min(max(0.0, lim - x), w)
        for lim, x, w in zip(al.limit[r], consumed, allowance, strict=True)
    ]
    return Room(
        agent_ids=cast(Sequence[str], ids),
        unreserved=al._unreserved_free(rows),
        reserved=np.zeros((len(rows), 4)) if reserved_all is None else reserved_all[rows],
        headroom=(headroom[0], headroom[1], headroom[2], headroom[3]),
        partial=partial,
    )


def _head(
    al: AllocatorArrays, entry: Entry, f: int, masks: tuple[Mask, Mask], want: int
) -> npt.NDArray[np.intp] | None:
    """Positions (in id order) of the fewest agents at the head of the entry's order (most
    slots first) that framework row f may be offered and that hold ``want`` slots; None
    when the eligible agents hold fewer (the caller takes the whole room). One compiled
    walk (rooms_compiled.head) that stops at the agent completing the count."""
    out = np.empty(min(max(want, 0), len(entry.order)), dtype=np.intp)
    if not len(out):
        return None if want > 0 else out
    closed, blocked = masks
    k = rooms_compiled.head(
        entry.order, entry.keys, entry.gone, entry.moved, entry.moved_keys,
        int(entry.n_moved[0]), entry.fits, entry.per, entry.rows,
        al.placement.ok, blocked, closed, f, want, out,
    )  # fmt: skip
    if k < 0:
        return None
    return np.sort(out[:k])
