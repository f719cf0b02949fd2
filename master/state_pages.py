"""GetState's lists a page at a time (ListAgents, ListFrameworks, ListTasks, ListOffers;
HTTP ``/api/v1/state/agents|frameworks|tasks|offers``): entries built by the same functions as
GetState's (``views``), in a stable key order, cut by ``paging`` (issue #48: at 50,000 agents
the whole state is one message of tens of MB, built while the core waits).

Keys: an agent's id; a framework's id; an offer's id; a task's framework id, task id and
whether it is live or ended (a task id may be used again once its task ended, and both are
listed). Run only through ``MasterRuntime.query``.
"""

from __future__ import annotations

from collections.abc import Iterator

from corral.master import paging, views
from corral.master.core.master import MasterCore
from corral.master.core.records import TaskRecord
from corral.master.core.states import FrameworkState
from corral.master.wire import convert
from corral.v1 import operator_pb2

AGENTS, FRAMEWORKS, TASKS, OFFERS = "agents", "frameworks", "tasks", "offers"


def list_agents(core: MasterCore, limit: int, page_token: str) -> operator_pb2.AgentList:
    """BadPage for a bad limit or token."""
    size = paging.limit_of(limit)
    after = paging.key_of(AGENTS, page_token, 1)
    page = paging.page_by_id(core.agents, after, size)
    out = operator_pb2.AgentList(
        master_id=core.master_id, total=page.total, next_page_token=page.next_token(AGENTS)
    )
    for a in page.items:
        views.agent_to_pb(core, a, out.agents.add())
    return out


def list_frameworks(
    core: MasterCore, limit: int, page_token: str, live_only: bool = False
) -> operator_pb2.FrameworkList:
    size = paging.limit_of(limit)
    after = paging.key_of(FRAMEWORKS, page_token, 1)
    page = paging.page_after(
        (
            ((f.framework_id,), f)
            for f in core.frameworks.values()
            if not (live_only and f.state is FrameworkState.REMOVED)
        ),
        after,
        size,
    )
    out = operator_pb2.FrameworkList(
        master_id=core.master_id, total=page.total, next_page_token=page.next_token(FRAMEWORKS)
    )
    for f in page.items:
        views.framework_to_pb(core, f, out.frameworks.add())
    for c in core.priority.sorted():
        convert.priority_class_to_pb(c, out.priority_classes.add())
    return out


def _tasks(core: MasterCore, live_only: bool) -> Iterator[tuple[paging.Key, TaskRecord]]:
    for fw in core.frameworks.values():
        for t in fw.tasks.values():
            yield (t.framework_id, t.task_id, "live"), t
    if not live_only:
        for t in core.completed.values():
            yield (t.framework_id, t.task_id, "ended"), t


def list_tasks(
    core: MasterCore, limit: int, page_token: str, live_only: bool = False
) -> operator_pb2.TaskList:
    size = paging.limit_of(limit)
    after = paging.key_of(TASKS, page_token, 3)
    page = paging.page_after(_tasks(core, live_only), after, size)
    out = operator_pb2.TaskList(
        master_id=core.master_id, total=page.total, next_page_token=page.next_token(TASKS)
    )
    agents: dict[str, None] = {}
    for t in page.items:
        views.task_to_pb(t, out.tasks.add())
        agents[t.agent_id] = None
    for agent_id in agents:
        a = core.agents.get(agent_id)
        if a is not None:
            convert.agent_spec_to_pb(a.spec, out.agents.add())
    return out


def list_offers(core: MasterCore, limit: int, page_token: str) -> operator_pb2.OfferList:
    size = paging.limit_of(limit)
    after = paging.key_of(OFFERS, page_token, 1)
    page = paging.page_by_id(core.all_offers, after, size)
    out = operator_pb2.OfferList(
        master_id=core.master_id, total=page.total, next_page_token=page.next_token(OFFERS)
    )
    for o in page.items:
        convert.offer_to_pb(o, out.offers.add())
    return out
