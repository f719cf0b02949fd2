"""GetState narrowed to one object (``GetStateRequest.scope``): what `corral describe` and
`corral agents drain --wait` need, made from that object alone (issue #48: at 50,000 agents
the whole state is a ~7 MB message the core builds while everything else waits, ~1.8 s).

Each scope reads the core's indexes, not every agent or task, except where said:

- ``agent``: by id a dictionary lookup; by name or hostname a pass over the agents' names (no
  message is built for the others). Each agent named, its live tasks (its own index) and the
  ended ones kept (a pass over the kept ended tasks, which are bounded per framework), its
  outstanding offers.
- ``framework_id``: the framework, its tasks (its own indexes), its offers.
- ``task``: the task id looked up in each framework's index (and its kept ended tasks), then
  each task's agent's info and its framework.
- ``role``: the roles (one pass over the agents, as GetRoles) and the role's frameworks.

Priority classes are in every scoped state (a framework's demands name them; there are few);
offers only where said above; ACLs never. An object not found gives a state without it: the
caller says "no such agent". Run only through ``MasterRuntime.query``.
"""

from __future__ import annotations

from collections.abc import Iterable

from corral import limits
from corral.master import views
from corral.master.core.master import MasterCore
from corral.master.core.records import AgentRecord, OfferRecord, TaskRecord
from corral.master.wire import convert
from corral.master.wire.convert import WireError
from corral.v1 import operator_pb2


def scoped_state_pb(core: MasterCore, request: operator_pb2.GetStateRequest) -> operator_pb2.State:
    """The state ``request.scope`` names; the whole state when it names none. WireError for a
    scope that cannot name anything (an empty or over-long id)."""
    scope = request.WhichOneof("scope")
    if scope is None:
        return views.state_pb(core)
    state = operator_pb2.State(master_id=core.master_id)
    if scope == "agent":
        _agent(core, _given(request.agent, "agent"), state)
    elif scope == "framework_id":
        _framework(core, _given(request.framework_id, "framework_id"), state)
    elif scope == "task":
        framework_id = request.task.framework_id
        if framework_id:
            _given(framework_id, "task.framework_id")
        _task(core, _given(request.task.task_id, "task.task_id"), framework_id, state)
    else:
        _role(core, _given(request.role, "role"), state)
    for c in core.priority.sorted():
        convert.priority_class_to_pb(c, state.priority_classes.add())
    return state


def _given(value: str, what: str) -> str:
    if not value:
        raise WireError(f"scope {what} is empty: name the object, or send no scope")
    if len(value) > limits.MAX_VALUE_LENGTH:  # HOST/NAME is two names long
        raise WireError(
            f"scope {what} is {len(value)} characters, more than {limits.MAX_VALUE_LENGTH}"
        )
    return value


def _named_agents(core: MasterCore, given: str) -> list[AgentRecord]:
    """As `corral describe` finds an agent (kubectl finds a node by name): its id, else each
    agent whose name, hostname or HOST/NAME is ``given`` (several may share one)."""
    agent = core.agents.get(given)
    if agent is not None:
        return [agent]
    return [
        a
        for a in core.agents.values()
        if given in (a.spec.name, a.spec.hostname, f"{a.spec.hostname}/{a.spec.name}")
    ]


def _offers(
    state: operator_pb2.State, offers: Iterable[OfferRecord], more: Iterable[OfferRecord]
) -> None:
    for o in (*offers, *more):
        convert.offer_to_pb(o, state.offers.add())


def _agent(core: MasterCore, given: str, state: operator_pb2.State) -> None:
    agents = _named_agents(core, given)
    ids = {a.agent_id for a in agents}
    for a in agents:
        views.agent_to_pb(core, a, state.agents.add())
        for t in a.tasks.values():
            views.task_to_pb(t, state.tasks.add())
        _offers(state, core.book.of_agent(a.agent_id), core.revocable.of_agent(a.agent_id))
    if ids:
        for t in core.completed.values():
            if t.agent_id in ids:
                views.task_to_pb(t, state.tasks.add())


def _framework(core: MasterCore, framework_id: str, state: operator_pb2.State) -> None:
    fw = core.frameworks.get(framework_id)
    if fw is None:
        return
    views.framework_to_pb(core, fw, state.frameworks.add())
    for t in (*fw.tasks.values(), *core.completed.of_framework(framework_id)):
        views.task_to_pb(t, state.tasks.add())
    _offers(state, core.book.of_framework(framework_id), core.revocable.of_framework(framework_id))


def _task(core: MasterCore, task_id: str, framework_id: str, state: operator_pb2.State) -> None:
    found: list[TaskRecord] = []
    frameworks = (
        [f for f in (core.frameworks.get(framework_id),) if f is not None]
        if framework_id
        else list(core.frameworks.values())
    )
    for fw in frameworks:
        live = fw.tasks.get(task_id)
        if live is not None:
            found.append(live)
    for fw in frameworks:
        ended = core.completed.get((fw.framework_id, task_id))
        if ended is not None:
            found.append(ended)
    agents: dict[str, None] = {}
    framework_ids: dict[str, None] = {}
    for t in found:
        views.task_to_pb(t, state.tasks.add())
        agents[t.agent_id] = None
        framework_ids[t.framework_id] = None
    for agent_id in agents:
        a = core.agents.get(agent_id)
        if a is not None:
            views.agent_to_pb(core, a, state.agents.add())
    for fid in framework_ids:
        views.framework_to_pb(core, core.frameworks[fid], state.frameworks.add())


def _role(core: MasterCore, role: str, state: operator_pb2.State) -> None:
    for v in core.role_views():
        if v.role == role:
            views.role_to_pb(v, state.roles.add())
    for f in core.frameworks.values():
        if f.spec.role == role:
            views.framework_to_pb(core, f, state.frameworks.add())
