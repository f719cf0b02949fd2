"""Tasks for the UI: pages of rows, filtered and newest first, and one task in full.

A task id is unique within its framework only: the detail is asked by id and answers every
task of that id (one, nearly always), or one framework's with ``framework_id``.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from corral.master.core.master import MasterCore
from corral.master.core.records import TaskRecord
from corral.master.core.types import TERMINAL_STATES, TaskState
from corral.master.ui import params
from corral.master.ui.common import events_about, resources_json
from corral.master.ui.params import Page

TASK_STATES = tuple(s.name for s in TaskState if s is not TaskState.UNKNOWN)
TASK_PARAMS = (*Page.PARAMS, "state", "framework_id", "agent_id", "q", "completed")
DETAIL_PARAMS = ("framework_id",)


def changed_at(t: TaskRecord) -> float:
    """When the task last changed as the master saw it: launched, or its latest status."""
    return max(t.launched_at, t.status.timestamp)


def task_row(t: TaskRecord) -> dict[str, Any]:
    s = t.status
    return {
        "id": t.task_id,
        "name": t.spec.name,
        "framework_id": t.framework_id,
        "agent_id": t.agent_id,
        "state": t.state.name,
        "reason": s.reason.name,
        "message": s.message,
        "exit_code": s.exit_code,
        "resources": resources_json(t.spec.resources),
        "priority_class": t.spec.priority_class,
        "demand": t.spec.demand,
        "launched_at": t.launched_at,
        "updated_at": s.timestamp,
    }


def _candidates(
    core: MasterCore, framework_id: str, agent_id: str, completed: bool
) -> Iterator[TaskRecord]:
    """The fewest tasks that can match: one framework's, one agent's, or all."""
    if framework_id:
        fw = core.frameworks.get(framework_id)
        if fw is not None:
            yield from fw.tasks.values()
        if completed:
            yield from core.completed.of_framework(framework_id)
        return
    if agent_id:
        agent = core.agents.get(agent_id)
        if agent is not None:
            yield from agent.tasks.values()
        if completed:
            yield from (t for t in core.completed.values() if t.agent_id == agent_id)
        return
    for fw in core.frameworks.values():
        yield from fw.tasks.values()
    if completed:
        yield from core.completed.values()


def _matches(tasks: Iterable[TaskRecord], state: str, agent_id: str, text: str) -> list[TaskRecord]:
    out = []
    for t in tasks:
        if state and t.state.name != state:
            continue
        if agent_id and t.agent_id != agent_id:
            continue
        if text and text not in t.task_id.lower() and text not in t.spec.name.lower():
            continue
        out.append(t)
    return out


def tasks_page(core: MasterCore, query: Mapping[str, str]) -> dict[str, Any]:
    """A page of tasks, the most recently changed first: ``state`` (a task state's name),
    ``framework_id``, ``agent_id``, ``q`` (in the id or name), ``completed`` (ended tasks
    too; true by default)."""
    page = Page.of(query)
    state = params.choice(query, "state", TASK_STATES)
    framework_id = query.get("framework_id", "")
    agent_id = query.get("agent_id", "")
    completed = params.boolean(query, "completed", True)
    text = query.get("q", "").lower()
    found = _matches(_candidates(core, framework_id, agent_id, completed), state, agent_id, text)
    # The newest offset+limit only: a full sort of 100,000 tasks per page is what this avoids.
    newest = heapq.nlargest(page.offset + page.limit, found, key=changed_at)
    return page.envelope(len(found), [task_row(t) for t in newest[page.offset :]])


def task_detail(
    core: MasterCore, task_id: str, framework_id: str, events: Any
) -> dict[str, Any] | None:
    """Every task ``task_id`` (of ``framework_id`` if given) with its agent, its framework,
    what preempted it and the events about it; None when there is none."""
    found: list[TaskRecord] = []
    ids = [framework_id] if framework_id else list(core.frameworks)
    for fid in ids:
        fw = core.frameworks.get(fid)
        task = fw.tasks.get(task_id) if fw is not None else None
        if task is None:
            task = core.completed.get((fid, task_id))
        if task is not None:
            found.append(task)
    if not found:
        return None
    history = events_about(events, task_id)
    out = []
    for t in found:
        agent = core.agents.get(t.agent_id)
        fw = core.frameworks.get(t.framework_id)
        out.append(
            {
                **task_row(t),
                "hostname": agent.spec.hostname if agent is not None else "",
                "framework_name": fw.spec.name if fw is not None else "",
                "role": fw.spec.role if fw is not None else "",
                "source": t.status.source.name,
                "kill_requested": t.kill_requested,
                "preempted_by": t.preempted_by,
                "ended": t.state in TERMINAL_STATES,
                # docs/containers.md: the image it runs in, the engine's container id
                "image": t.spec.container.image if t.spec.container is not None else None,
                "container_id": t.status.container_id or None,
            }
        )
    return {"tasks": out, "events": history}
