"""Gang cuts from the head of a room (Allocator.room with ``want``, fit_cache.py) are the cuts
from the whole room, through charges that reorder the agents by slots: generated clusters of
agents of mixed sizes, charged piece by piece as a tick of gang cuts charges them."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corral.master.allocator.interface import Scalars
from corral.master.allocator.numpy_allocator import DrfAllocator
from corral.master.allocator.reference import ReferenceAllocator
from corral.master.core import gangs

SHAPE = (1.0, 128.0, 0.0, 0.0)


def twins(cpus: list[int]) -> tuple[DrfAllocator, ReferenceAllocator]:
    """The numpy allocator and the reference, each with agents of these cpus (and 4 GiB) and
    frameworks f and g in role ``*``."""
    fast, ref = DrfAllocator(), ReferenceAllocator()
    for alloc in (fast, ref):
        for i, n in enumerate(cpus):
            alloc.add_agent(f"a{i:03d}", (float(n), 4096.0, 0.0, 0.0), {}, [])
        alloc.add_framework("f", "*")
        alloc.add_framework("g", "*")
    return fast, ref


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_the_head_of_the_room_cuts_what_the_whole_room_cuts(data: st.DataObject) -> None:
    fast, ref = twins(data.draw(st.lists(st.integers(1, 12), min_size=1, max_size=200)))
    for _ in range(data.draw(st.integers(1, 12))):
        want = data.draw(st.integers(1, 40))
        whole = gangs.fit(ref.room("f", 0.0, SHAPE), SHAPE, want)
        head = fast.room("f", 0.0, SHAPE, want=want)
        cut = gangs.fit(head, SHAPE, want)
        if head.partial:
            assert cut.found and cut.slots == whole.slots
        else:
            assert cut == whole
        # Another framework takes part of a few agents (its bundle), as the next cut would.
        room = ref.room("g", 0.0, SHAPE)
        if not len(room.agent_ids):
            break
        for _ in range(data.draw(st.integers(1, 4))):
            i = data.draw(st.integers(0, len(room.agent_ids) - 1))
            k = data.draw(st.integers(1, 3))
            free = room.unreserved[i]
            take = (min(float(free[0]), k * SHAPE[0]), min(float(free[1]), k * SHAPE[1]), 0.0, 0.0)
            for alloc in (fast, ref):
                alloc.allocate("g", str(room.agent_ids[i]), take)
            room = ref.room("g", 0.0, SHAPE)
            if not len(room.agent_ids):
                break


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_the_cache_kept_through_cycles_and_returns_is_a_fresh_test(data: st.DataObject) -> None:
    """The cache outlives cycles (the walk's charges recounted) and returned resources
    (recounted, or the entry dropped when an agent starts to fit): rooms asked between
    them are the reference's, whole and cut from the head."""
    sizes = data.draw(st.lists(st.integers(0, 6), min_size=1, max_size=30))
    fast, ref = twins(sizes)
    held: list[tuple[str, str, Scalars]] = []
    for t in range(data.draw(st.integers(1, 10))):
        for alloc in (fast, ref):
            assert list(alloc.room("f", float(t), SHAPE).agent_ids) == list(
                ref.room("f", float(t), SHAPE).agent_ids
            )
        want = data.draw(st.integers(1, 12))
        whole = gangs.fit(ref.room("f", float(t), SHAPE), SHAPE, want)
        head = gangs.fit(fast.room("f", float(t), SHAPE, want=want), SHAPE, want)
        assert head.slots == whole.slots
        action = data.draw(st.sampled_from(["cycle", "take", "give back"]))
        if action == "cycle":
            for alloc in (fast, ref):
                alloc.set_suppressed("f", True)  # g alone: its plan is the same in both
            plans = [alloc.cycle(float(t), t) for alloc in (fast, ref)]
            for alloc in (fast, ref):
                alloc.set_suppressed("f", False)
            mine = sorted((a.agent_id, a.scalars) for a in plans[0])
            theirs = sorted((a.agent_id, a.scalars) for a in plans[1])
            assert mine == theirs
            held += [("g", aid, s) for aid, s in mine]
        elif action == "take":
            i = data.draw(st.integers(0, len(sizes) - 1))
            cpus = float(min(sizes[i], data.draw(st.integers(1, 3))))
            room = ref.room("g", float(t), (cpus, 1.0, 0.0, 0.0)) if cpus else None
            if room is not None and f"a{i:03d}" in list(room.agent_ids):
                for alloc in (fast, ref):
                    alloc.allocate("g", f"a{i:03d}", (cpus, 1.0, 0.0, 0.0))
                held.append(("g", f"a{i:03d}", (cpus, 1.0, 0.0, 0.0)))
        elif held:
            k = data.draw(st.integers(1, len(held)))
            back, held = held[:k], held[k:]
            for alloc in (fast, ref):
                alloc.recover_many(back)


def test_a_shape_nobody_asks_for_is_forgotten_at_the_second_cycle() -> None:
    """Every charge recounts the agent in each cached shape: one asked once (an explain, a
    gang since started) is dropped once a whole cycle passes without it being asked."""
    al = DrfAllocator()
    al.add_agent("a", (4.0, 1024.0, 0.0, 0.0), {}, [])
    al.add_framework("f", "*")
    al.set_suppressed("f", True)  # the cycles offer nothing: only the sweep acts
    key = (SHAPE, 0)
    al.room("f", 0.0, SHAPE)
    al.cycle(1.0, 0)
    assert al._fit_cache.get(key) is not None  # asked since the last sweep: kept (and asked)
    al.cycle(2.0, 0)
    al.cycle(3.0, 0)
    assert al._fit_cache.get(key) is None
