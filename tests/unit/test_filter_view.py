"""The refuse filters' boolean view is the expiries' answer whenever FilterMatrix.current says
so (the why-pending scan's fast test reads it then: rooms.has_room): random histories of
filters installed one by one and in batches, lifted by returned resources, dropped by REVIVE,
swept as time passes, asked at times around now."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corral.master.allocator.numpy_allocator import DrfAllocator

AGENTS = [f"a{i}" for i in range(6)]
FRAMEWORKS = ["f", "g", "h"]
expiry = st.sampled_from([0.5, 1.0, 2.0, 3.5, 10.0, 1e12])
step = st.one_of(
    st.tuples(st.just("filter"), st.sampled_from(FRAMEWORKS), st.sampled_from(AGENTS), expiry),
    st.tuples(
        st.just("filters"),
        st.sampled_from(FRAMEWORKS),
        st.lists(st.sampled_from(AGENTS), max_size=6),
        expiry,
    ),
    st.tuples(st.just("revive"), st.sampled_from(FRAMEWORKS)),
    st.tuples(st.just("charge_and_return"), st.sampled_from(FRAMEWORKS), st.sampled_from(AGENTS)),
    st.tuples(st.just("tick"), st.sampled_from([0.0, 0.5, 1.0, 3.0])),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, max_size=40))
def test_the_boolean_view_is_the_expiries_answer_when_current(steps: list[tuple[Any, ...]]) -> None:
    al = DrfAllocator()
    for a in AGENTS:
        al.add_agent(a, (4.0, 1024.0, 0.0, 0.0), {}, [])
    for f in FRAMEWORKS:
        al.add_framework(f, "*")
    # Filter times are clock readings, after the epoch (masks/filters.py: an expiry of 0 is
    # "no filter"): the queries below start a second before the first ``now``.
    now = 1.0
    for s in steps:
        kind = s[0]
        if kind == "filter":
            al.add_filter(s[1], s[2], now + s[3], (1.0, 128.0, 0.0, 0.0))
        elif kind == "filters":
            al.add_filters(s[1], s[2], now + s[3])
        elif kind == "revive":
            al.clear_filters(s[1])
        elif kind == "charge_and_return":
            al.allocate(s[1], s[2], (2.0, 256.0, 0.0, 0.0))
            al.recover(s[1], s[2], (2.0, 256.0, 0.0, 0.0))  # may lift filters
        else:
            now += s[1]
            al.filters.expire(now)  # as a cycle sweeps
        fm = al.filters
        for q in (now - 1.0, now, now + 0.25, now + 1.0, now + 5.0):
            if fm.current(q):
                assert np.array_equal(fm.active, fm.until > q), (q, now)
    # A sweep at now makes the view current at now (the scan runs right after a cycle's).
    al.filters.expire(now)
    assert al.filters.current(now)
