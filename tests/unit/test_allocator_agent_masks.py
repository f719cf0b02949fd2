"""An agent added to the allocator gets its placement row decided per framework group: once for
all frameworks when they are alike (no grouping), per group when they differ, and none before
any framework exists; the row counts (``count_ok``) what it allows."""

from __future__ import annotations

from corral.master.allocator import make_allocator
from corral.master.allocator.numpy_allocator import DrfAllocator
from corral.placement import Taint, TaintEffect, Toleration

TOTAL = (8.0, 1024.0, 1024.0, 0.0)
HARD = Taint("spot", "true", TaintEffect.NO_SCHEDULE)
SOFT = Taint("old", "yes", TaintEffect.PREFER_NO_SCHEDULE)


def _allocator(tolerations: list[tuple[Toleration, ...]]) -> DrfAllocator:
    al = make_allocator("numpy")
    assert isinstance(al, DrfAllocator)
    for i, tols in enumerate(tolerations):
        al.add_framework(f"f{i}", "*", tolerations=tols)
    return al


def _row(al: DrfAllocator, agent_id: str) -> tuple[list[bool], list[bool], int]:
    a = al._agents.rows[agent_id]
    m = al._frameworks.size
    ok = [bool(x) for x in al.placement.ok[a, :m]]
    soft = [bool(x) for x in al.placement.prefer_not[a, :m]]
    return ok, soft, int(al.count_ok[a])


def test_frameworks_alike_are_decided_once_for_all() -> None:
    al = _allocator([(), (), ()])
    al.add_agent("plain", TOTAL, {}, ())
    al.add_agent("tainted", TOTAL, {}, (HARD,))
    al.add_agent("soft", TOTAL, {}, (SOFT,))
    assert _row(al, "plain") == ([True] * 3, [False] * 3, 3)
    assert _row(al, "tainted") == ([False] * 3, [False] * 3, 0)
    assert _row(al, "soft") == ([True] * 3, [True] * 3, 3)


def test_frameworks_that_differ_are_decided_per_group() -> None:
    spot = (Toleration("spot", exists=True),)
    old = (Toleration("old", exists=True),)
    al = _allocator([(), spot, (), old, spot])
    al.add_agent("tainted", TOTAL, {}, (HARD,))
    al.add_agent("soft", TOTAL, {}, (SOFT,))
    assert _row(al, "tainted") == ([False, True, False, False, True], [False] * 5, 2)
    assert _row(al, "soft") == ([True] * 5, [True, True, True, False, True], 5)


def test_an_agent_before_any_framework_then_a_framework_after_it() -> None:
    al = _allocator([])
    al.add_agent("tainted", TOTAL, {}, (HARD,))
    assert _row(al, "tainted") == ([], [], 0)
    al.add_framework("f0", "*")
    al.add_framework("f1", "*", tolerations=(Toleration("spot", exists=True),))
    assert _row(al, "tainted") == ([False, True], [False, False], 1)
