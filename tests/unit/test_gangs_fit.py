"""gangs.fit's two forms (arrays for a large room, plain Python for a small one) cut the same
bundle from the same room: generated rooms with reservations, headroom and demand filters."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from corral.master.allocator.interface import Room
from corral.master.core import gangs

quarter = st.integers(0, 32).map(lambda n: n / 4)
row = st.tuples(quarter, quarter.map(lambda x: x * 256), st.just(0.0), st.integers(0, 2).map(float))


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_the_small_form_cuts_what_the_array_form_cuts(data: st.DataObject) -> None:
    m = data.draw(st.integers(0, gangs.SMALL_ROOM))
    unreserved = np.array(data.draw(st.lists(row, min_size=m, max_size=m)) or np.zeros((0, 4)))
    reserved = np.array(data.draw(st.lists(row, min_size=m, max_size=m)) or np.zeros((0, 4)))
    room = Room(
        agent_ids=[f"a{i:02d}" for i in range(m)],
        unreserved=unreserved.reshape(m, 4),
        reserved=reserved.reshape(m, 4) / 4,
        headroom=data.draw(st.tuples(quarter, st.just(1e9), st.just(1e9), st.just(1e9)))
        if data.draw(st.booleans())
        else (float("inf"),) * 4,
    )
    shape = data.draw(
        st.sampled_from([(1.0, 128.0, 0.0, 0.0), (0.5, 0.0, 0.0, 1.0), (2.0, 512.0, 0.0, 0.0)])
    )
    members = data.draw(st.integers(1, 12))
    banned = set(data.draw(st.lists(st.sampled_from(room.agent_ids or ["x"]), max_size=3)))
    allowed = (lambda aid: aid not in banned) if banned else None
    small = gangs._fit_small(room, shape, members, allowed)
    arrays = gangs._fit_arrays(room, shape, members, allowed)
    assert small == arrays
