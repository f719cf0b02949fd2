"""Cursor pages (master/paging.py, master/state_pages.py; issue #48): every page of a listing
read in turn gives the whole listing once, in key order, and objects added or removed between
pages neither shift nor repeat the others; a bad limit or token is refused with its reason."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corral.master import paging, state_pages, views
from corral.master.core import events as ev
from corral.master.core.config import MasterConfig
from corral.master.core.types import TaskState
from corral.master.http import state_pages as http_pages
from tests.unit.core_harness import Harness, status, task

ids = st.lists(st.text(min_size=1, max_size=6), unique=True, max_size=60)


def read_all(listing: dict[str, int], limit: int) -> list[str]:
    out: list[str] = []
    token = ""
    for _ in range(len(listing) + 2):
        page = paging.page_after(
            (((k,), k) for k in listing), paging.key_of("agents", token, 1), limit
        )
        assert page.total == len(listing)
        out += page.items
        token = page.next_token("agents")
        if not token:
            return out
    raise AssertionError("the pages did not end")


@settings(max_examples=200, deadline=None)
@given(keys=ids, limit=st.integers(1, 10))
def test_the_pages_together_are_the_whole_listing_in_key_order(keys: list[str], limit: int) -> None:
    assert read_all(dict.fromkeys(keys, 0), limit) == sorted(keys)


@settings(max_examples=200, deadline=None)
@given(
    keys=ids,
    limit=st.integers(1, 8),
    seed=st.integers(0, 2**32 - 1),
)
def test_objects_added_and_removed_between_pages_do_not_shift_the_others(
    keys: list[str], limit: int, seed: int
) -> None:
    """Each key present throughout is listed exactly once; nothing is listed twice; the listing
    is in strictly increasing order (so a key is never seen again on a later page)."""
    rng = random.Random(seed)
    listing = dict.fromkeys(keys, 0)
    ever: set[str] = set(listing)
    removed: set[str] = set()
    seen: list[str] = []
    token = ""
    for n in range(1000):
        page = paging.page_after(
            (((k,), k) for k in listing), paging.key_of("agents", token, 1), limit
        )
        seen += page.items
        token = page.next_token("agents")
        if not token:
            break
        # Between pages: some added (before and after the cursor alike), some removed.
        for _ in range(rng.randint(0, 3)):
            new = f"{rng.choice('0aMz~')}{n}-{rng.randint(0, 99)}"
            listing[new] = 0
            ever.add(new)
        for k in rng.sample(sorted(listing), min(len(listing), rng.randint(0, 2))):
            del listing[k]
            removed.add(k)
    else:
        raise AssertionError("the pages did not end")
    assert seen == sorted(set(seen)), "out of order or repeated"
    throughout = set(keys) - removed
    assert throughout <= set(seen), f"missed: {sorted(throughout - set(seen))}"
    assert set(seen) <= ever


def test_limits_and_tokens_are_checked_with_a_reason() -> None:
    assert paging.limit_of(0) == paging.DEFAULT_LIMIT == 500
    assert paging.limit_of(5000) == 5000
    for bad in (-1, 5001):
        with pytest.raises(paging.BadPage, match="limit must be between 1 and 5000"):
            paging.limit_of(bad)
    with pytest.raises(paging.BadPage, match="limit must be an integer"):
        paging.parse_limit("ten")
    token = paging.token_of("agents", ("A1",))
    assert paging.key_of("agents", token, 1) == ("A1",)
    for bad_token, listing in [
        (token, "tasks"),  # another list's
        ("not-a-token", "agents"),
        ("%%%", "agents"),
        (paging.token_of("agents", ("A1", "x")), "agents"),  # wrong shape
        ("x" * 5000, "agents"),
    ]:
        with pytest.raises(paging.BadPage, match="is not one of the"):
            paging.key_of(listing, bad_token, 1)


def test_http_query_is_checked_before_the_core_is_asked() -> None:
    for pairs, reason in [
        ([("limt", "5")], "unknown query parameter 'limt'"),
        ([("limit", "5"), ("limit", "6")], "limit is given twice"),
        ([("limit", "0.5")], "limit must be an integer"),
        ([("limit", "9999")], "limit must be between"),
        ([("after", "junk")], "is not one of the agents list's"),
    ]:
        with pytest.raises(paging.BadPage, match=reason):
            http_pages.page_builder("agents", pairs)
    with pytest.raises(paging.BadPage, match="live_only must be true or false"):
        http_pages.page_builder("tasks", [("live_only", "maybe")])
    with pytest.raises(paging.BadPage, match="unknown query parameter 'live_only'"):
        http_pages.page_builder("agents", [("live_only", "true")])


def test_agents_paged_from_the_core_with_agents_registering_between_pages() -> None:
    h = Harness(MasterConfig(agent_timeout=10**6))
    first = {h.add_agent()[0] for _ in range(7)}
    seen: list[str] = []
    token = ""
    while True:
        page = state_pages.list_agents(h.core, 3, token)
        assert page.master_id == "m1"
        seen += [a.info.id for a in page.agents]
        token = page.next_page_token
        if not token:
            break
        h.add_agent()  # registers while the client reads
    assert seen == sorted(set(seen)) and first <= set(seen)
    assert page.total == len(h.core.agents)
    # The whole list in one page matches GetState's entries, field for field.
    whole = state_pages.list_agents(h.core, 0, "")
    by_id = {a.info.id: a for a in views.state_pb(h.core).agents}
    assert [a.info.id for a in whole.agents] == sorted(by_id)
    assert all(a == by_id[a.info.id] for a in whole.agents)
    with pytest.raises(paging.BadPage):
        state_pages.list_agents(h.core, 0, paging.token_of("frameworks", ("A1",)))


def test_tasks_and_frameworks_paged_live_and_ended() -> None:
    h = Harness(MasterConfig(agent_timeout=10**6))
    aid, _ = h.add_agent(resources="cpus:16;mem:8192;disk:1000")
    gone, _ = h.subscribe("gone")
    h.handle(ev.Teardown(**h.call_base(gone)))
    fid, _ = h.subscribe("batch")
    offers = h.offers_for(fid)
    h.accept(fid, [o.offer_id for o in offers], *(task(f"t{i}") for i in range(5)))
    assert offers, "the framework was offered the agent"
    h.agent_updates(aid, status("t0", fid, aid, TaskState.FINISHED))

    def every(live_only: bool, limit: int) -> list[tuple[str, str]]:
        out, token = [], ""
        while True:
            page = state_pages.list_tasks(h.core, limit, token, live_only)
            out += [(t.info.framework_id, t.info.task_id) for t in page.tasks]
            assert {a.id for a in page.agents} == {t.info.agent_id for t in page.tasks}
            token = page.next_page_token
            if not token:
                return out

    live = [(fid, f"t{i}") for i in range(1, 5)]
    assert every(True, 2) == live
    assert sorted(every(False, 2)) == sorted([(fid, "t0"), *live])
    assert len(every(False, 1)) == 5
    frameworks = state_pages.list_frameworks(h.core, 1, "")
    assert frameworks.total == 2 and len(frameworks.frameworks) == 1
    assert frameworks.priority_classes  # what demands' class names resolve to
    rest = state_pages.list_frameworks(h.core, 1, frameworks.next_page_token)
    assert {frameworks.frameworks[0].info.id, rest.frameworks[0].info.id} == {fid, gone}
    assert rest.next_page_token == ""
    live_only = state_pages.list_frameworks(h.core, 0, "", live_only=True)
    assert [f.info.id for f in live_only.frameworks] == [fid]


@settings(max_examples=200, deadline=None)
@given(keys=ids, limit=st.integers(1, 10), after=st.none() | st.text(max_size=6))
def test_the_fast_page_by_id_is_the_same_page(
    keys: list[str], limit: int, after: str | None
) -> None:
    objects = {k: f"object {k}" for k in keys}
    cursor = None if after is None else (after,)
    fast = paging.page_by_id(objects, cursor, limit)
    assert fast == paging.page_after((((k,), v) for k, v in objects.items()), cursor, limit)
