"""``Plan.by_framework`` (the offer book's grouping of a cycle's plan) groups the first n
entries by framework, in plan order, frameworks in order of their first entry, the same from
the rows as from the ids."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from corral.master.allocator.interface import Plan


@st.composite
def plans(draw: st.DrawFn) -> tuple[Plan, Plan, int]:
    fw_table = [f"f{i}" for i in range(draw(st.integers(1, 6)))]
    agent_table = [f"a{i}" for i in range(draw(st.integers(1, 8)))]
    n = draw(st.integers(0, 30))
    fws = np.array(draw(st.lists(st.integers(0, len(fw_table) - 1), min_size=n, max_size=n)))
    agents = np.array(draw(st.lists(st.integers(0, len(agent_table) - 1), min_size=n, max_size=n)))
    scalars = np.arange(4 * n, dtype=np.float64).reshape(n, 4)
    by_rows = Plan.from_rows(
        fw_table, fws.astype(np.intp), agent_table, agents.astype(np.intp), scalars
    )
    by_ids = Plan([fw_table[f] for f in fws], [agent_table[a] for a in agents], scalars)
    return by_rows, by_ids, draw(st.integers(0, n))


@given(plans())
def test_groups_from_rows_and_from_ids_agree_with_a_plain_grouping(
    case: tuple[Plan, Plan, int],
) -> None:
    by_rows, by_ids, n = case
    fids, aids, _ = by_ids.columns()
    want: dict[str, list[int]] = {}
    for i in range(n):
        want.setdefault(fids[i], []).append(i)
    for plan in (by_rows, by_ids):
        got = plan.by_framework(n)
        assert [(fid, idx.tolist()) for fid, idx in got] == list(want.items())
        for _, idx in got:
            assert plan.agents_at(idx) == [aids[i] for i in idx.tolist()]
