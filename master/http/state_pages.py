"""``/api/v1/state/agents|frameworks|tasks|offers``: GetState's lists a page at a time over HTTP,
the same pages as the Operator API's ListAgents, ListFrameworks, ListTasks and ListOffers
(master/state_pages.py)
with each entry in ``/api/v1/state``'s shape (state_json.py).

Query: ``limit`` (default 500, at most 5000), ``after`` (the ``next`` of the previous page;
none: the first page) and, for frameworks and tasks, ``live_only=true|false``. The answer:
``{"master_id", "total", "items": [...], "next": TOKEN or null}``. A bad or repeated parameter,
a bad limit or a token this master did not give for that list is a 400 naming it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from corral.limits import echo
from corral.master import paging, state_pages
from corral.master.core.master import MasterCore
from corral.master.http import state_json

PARAMS = {
    state_pages.AGENTS: ("limit", "after"),
    state_pages.FRAMEWORKS: ("limit", "after", "live_only"),
    state_pages.TASKS: ("limit", "after", "live_only"),
    state_pages.OFFERS: ("limit", "after"),
}


def _query(listing: str, pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    allowed = PARAMS[listing]
    given: dict[str, str] = {}
    for name, value in pairs:
        if name not in allowed:
            raise paging.BadPage(
                f"unknown query parameter {echo(name)}; the parameters are " + ", ".join(allowed)
            )
        if name in given:
            raise paging.BadPage(f"{name} is given twice")
        given[name] = value
    live = given.get("live_only", "false").lower()
    if live not in ("true", "false"):
        raise paging.BadPage(f"live_only must be true or false, got {echo(live)}")
    return given


def page_builder(
    listing: str, pairs: Iterable[tuple[str, str]]
) -> Callable[[MasterCore], dict[str, Any]]:
    """The function to run on the core for this request's page; BadPage for a bad query (the
    limit and token are checked here, before the core is asked)."""
    given = _query(listing, pairs)
    limit = paging.parse_limit(given.get("limit"))
    token = given.get("after", "")
    paging.key_of(listing, token, 3 if listing == state_pages.TASKS else 1)
    live_only = given.get("live_only", "false").lower() == "true"

    def build(core: MasterCore) -> dict[str, Any]:
        if listing == state_pages.AGENTS:
            agents = state_pages.list_agents(core, limit, token)
            items = [state_json.agent(a) for a in agents.agents]
            return _page(agents.master_id, agents.total, items, agents.next_page_token)
        if listing == state_pages.FRAMEWORKS:
            fws = state_pages.list_frameworks(core, limit, token, live_only)
            classes = state_json.classes_of(fws)
            items = [state_json.framework(f, classes) for f in fws.frameworks]
            return _page(fws.master_id, fws.total, items, fws.next_page_token)
        if listing == state_pages.OFFERS:
            offers = state_pages.list_offers(core, limit, token)
            items = [state_json.offer(o) for o in offers.offers]
            return _page(offers.master_id, offers.total, items, offers.next_page_token)
        tasks = state_pages.list_tasks(core, limit, token, live_only)
        items = [state_json.task(t) for t in tasks.tasks]
        return _page(tasks.master_id, tasks.total, items, tasks.next_page_token)

    return build


def _page(master_id: str, total: int, items: list[dict[str, Any]], token: str) -> dict[str, Any]:
    return {"master_id": master_id, "total": total, "items": items, "next": token or None}
