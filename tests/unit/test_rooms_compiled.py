"""The compiled loops of a gang tick (rooms_compiled.py, ChargeBook.charge_one) against the numpy
code they replaced, kept here as the reference: the same order after each re-placing (the
sorted order and the moved agents merged), the same head of a room as the whole room gives,
the same arrays after each charge. Compiled and as plain Python."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corral.master.allocator import charge_table, rooms_compiled
from corral.master.allocator.charge_table import ChargeBook
from corral.master.allocator.fit_cache import Entry, FitCache

Loops = dict[str, Callable[..., Any]]


def loops_for(mode: str) -> Loops:
    names = ("move", "head", "any_eligible")
    if mode == "python":
        if not charge_table.COMPILED:
            pytest.skip("numba is not installed: the loops already run as Python")
        return {n: getattr(rooms_compiled, n).py_func for n in names}
    return {n: getattr(rooms_compiled, n) for n in names}


modes = pytest.mark.parametrize("mode", ["compiled", "python"])


def old_move(
    order: npt.NDArray[np.intp], keys: npt.NDArray[np.int64], per: Any, i: int, new: int
) -> None:
    """fit_cache.Entry.move as it was, with numpy slices."""
    if new == per[i]:
        return
    m = len(per)
    at = int(np.searchsorted(keys, -int(per[i]) * (m + 1) + i))
    per[i] = new
    k = -int(per[i]) * (m + 1) + i
    to = int(np.searchsorted(keys, k))
    if to > at:
        order[at : to - 1] = order[at + 1 : to]
        keys[at : to - 1] = keys[at + 1 : to]
        order[to - 1], keys[to - 1] = i, k
    else:
        order[to + 1 : at + 1] = order[to:at]
        keys[to + 1 : at + 1] = keys[to:at]
        order[to], keys[to] = i, k


def ordered(per: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.int64]]:
    m = len(per)
    keys = -per * (m + 1) + np.arange(m, dtype=np.int64)
    order = np.argsort(keys, kind="stable").astype(np.intp)
    return order, keys[order]


settings_ = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def entry_of(per: npt.NDArray[np.int64], room: int) -> Entry:
    """A fit cache entry whose slots are ``per`` (shape cpus:1), with ``room`` places for
    moved agents (small, so re-sorting when full is exercised too)."""
    m = len(per)
    free = np.zeros((m, 4))
    free[:, 0] = per
    e = FitCache().put(
        ((1.0, 0.0, 0.0, 0.0), 0), np.arange(m, dtype=np.intp), np.arange(m).astype(object),
        free, m,
    )  # fmt: skip
    e.moved, e.moved_keys = np.zeros(room, dtype=np.intp), np.zeros(room, dtype=np.int64)
    return e


def move_with(loops: Loops, e: Entry, i: int, new: int) -> None:
    """Entry.move with the loop under test."""
    if not loops["move"](e.keys, e.per, e.gone, e.moved, e.moved_keys, e.n_moved, i, new):
        e.per[i] = new
        e.sort()


@modes
@settings_
@given(st.data())
def test_move_keeps_the_order_the_numpy_shifts_kept(mode: str, data: st.DataObject) -> None:
    loops = loops_for(mode)
    per0 = np.array(data.draw(st.lists(st.integers(0, 6), min_size=1, max_size=40)), dtype=np.int64)
    e = entry_of(per0.copy(), data.draw(st.integers(1, 8)))
    order, keys = ordered(per0)
    theirs = (order.copy(), keys.copy(), per0.copy())
    for _ in range(data.draw(st.integers(1, 30))):
        i = data.draw(st.integers(0, len(per0) - 1))
        new = data.draw(st.integers(0, 6))
        move_with(loops, e, i, new)
        old_move(*theirs, i, new)
        assert e.per.tolist() == theirs[2].tolist()
        # The merged order is the one the shifts kept, and the one a fresh sort gives.
        assert e.ordered().tolist() == theirs[0].tolist() == ordered(e.per)[0].tolist()


def whole_head(
    order: Any, fits: Any, per: Any, eligible: npt.NDArray[np.bool_], want: int
) -> npt.NDArray[np.intp] | None:
    """What rooms._head is for: of the whole room (fit test passed, a slot, eligible), the
    first agents in the order until ``want`` slots, in position order; None if it holds
    fewer. (The chunked gathers it replaced took the same agents, but stopped at a chunk of
    agents that failed the fit test with a slot left, an edge of float noise.)"""
    cand = order[(fits & (per > 0) & eligible)[order]]
    counts = np.cumsum(per[cand])
    if not len(cand) or counts[-1] < want:
        return None
    cut = int(np.searchsorted(counts, want)) + 1
    return np.sort(cand[:cut])


@modes
@settings_
@given(st.data())
def test_head_takes_the_agents_the_whole_room_gives(mode: str, data: st.DataObject) -> None:
    loops = loops_for(mode)
    m = data.draw(st.integers(1, 60))
    per = np.array(data.draw(st.lists(st.integers(0, 5), min_size=m, max_size=m)), dtype=np.int64)
    fits = np.array(data.draw(st.lists(st.booleans(), min_size=m, max_size=m)), dtype=np.bool_)
    fits &= per > 0  # the cache's fit test and slots agree but at the edges
    # An order with some agents moved since it was sorted (as charges leave it).
    e = entry_of(per.copy(), data.draw(st.integers(1, 8)))
    for _ in range(data.draw(st.integers(0, 10))):
        move_with(loops, e, data.draw(st.integers(0, m - 1)), data.draw(st.integers(0, 5)))
    per = e.per
    fits &= per > 0
    order = e.ordered()
    # Agent rows 0..m-1 in a shuffled placement; framework column 1 of 2.
    rows = np.array(data.draw(st.permutations(range(m))), dtype=np.intp)
    ok = np.array(data.draw(st.lists(st.booleans(), min_size=2 * m, max_size=2 * m))).reshape(m, 2)
    # The dynamic rules' masks (eligibility.py): pairs blocked, agents closed.
    blocked = np.array(data.draw(st.lists(st.booleans(), min_size=2 * m, max_size=2 * m)))
    blocked = blocked.reshape(m, 2)
    closed = np.array(data.draw(st.lists(st.booleans(), min_size=m, max_size=m)))
    eligible = ok[rows, 1] & ~blocked[rows, 1] & ~closed[rows]
    for want in (1, 2, 5, 17, 400):
        out = np.empty(min(want, m), dtype=np.intp)
        k = loops["head"](
            e.order, e.keys, e.gone, e.moved, e.moved_keys, int(e.n_moved[0]),
            fits, per, rows, ok, blocked, closed, 1, want, out,
        )  # fmt: skip
        expected = whole_head(order, fits, per, eligible, want)
        if expected is None:
            assert k == -1
        else:
            assert np.sort(out[:k]).tolist() == expected.tolist()
    found = loops["any_eligible"](fits, rows, ok, blocked, closed, 1)
    assert found == bool((fits & eligible).any())


class OldBook:
    """The allocator's per-charge arithmetic as it was: ``add`` with three one-row arrays, then
    the framework's, role's and agent's rows updated with numpy and lists."""

    def __init__(self, arrays: tuple[Any, ...]) -> None:
        self.book = ChargeBook(16)
        self.alloc, self.role_alloc, self.used, self.fw_count, self.role_count = arrays

    def charge(self, f: int, a: int, r: int, amounts: list[float], from_res: list[float]) -> None:
        self.book.add(
            np.array([f], dtype=np.intp), np.array([a], dtype=np.intp), np.array([amounts])
        )
        self.alloc[f] += amounts
        self.role_alloc[r] += amounts
        self.fw_count[f] += 1
        self.role_count[r] += 1
        used = self.used[a].tolist()
        self.used[a] = [u + x - q for u, x, q in zip(used, amounts, from_res, strict=True)]


def fresh() -> tuple[Any, ...]:
    return (
        np.zeros((4, 4)),
        np.zeros((2, 4)),
        np.zeros((9, 4)),
        np.zeros(4, dtype=np.int64),
        np.zeros(2, dtype=np.int64),
    )


value = st.sampled_from([0.0, 0.1, 0.5, 1.0, 3.0, 128.0, 1e-9])


@settings_
@given(
    st.lists(
        st.tuples(
            st.integers(0, 3),
            st.integers(0, 8),
            st.integers(0, 1),
            st.tuples(*[value] * 4),
            st.tuples(*[value] * 4),
        ),
        max_size=60,
    )
)
def test_charge_one_is_the_old_per_charge_arithmetic(
    steps: list[tuple[int, int, int, tuple[float, ...], tuple[float, ...]]],
) -> None:
    old = OldBook(fresh())
    new_arrays = fresh()
    book = ChargeBook(16)
    for f, a, r, amounts, res in steps:
        from_res = [min(x, q) for x, q in zip(amounts, res, strict=True)]
        old.charge(f, a, r, list(amounts), from_res)
        book.charge_one(f, a, r, amounts, from_res, new_arrays)  # type: ignore[arg-type]
    olds = (old.alloc, old.role_alloc, old.used, old.fw_count, old.role_count)
    for x, y in zip(new_arrays, olds, strict=True):
        assert x.tolist() == y.tolist()
    assert len(book) == len(old.book)
    for f in range(4):
        mine, theirs = book.of_framework(f), old.book.of_framework(f)
        assert sorted(zip(mine[0].tolist(), mine[1].tolist(), strict=True)) == sorted(
            zip(theirs[0].tolist(), theirs[1].tolist(), strict=True)
        )
