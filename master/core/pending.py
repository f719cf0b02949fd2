"""Why pending, as cluster events (docs/scheduling.md, "Why pending").

Rules:
1. After an allocation cycle, at most once per ``config.pending_event_interval`` seconds (a
   *scan*), the core looks at every demand with unmet tasks of a framework that is subscribed,
   connected and not suppressed (a suppressed framework's demands wait by its own choice).
2. A demand that is not a waiting gang is *unschedulable* when no connected agent has room for
   one of its tasks now (demands.py's per-agent reasons, the framework's refuse filters and
   draining agents included; its own outstanding offers count as room). It gets a
   ``FailedScheduling`` event (kind ``demand_unschedulable``) whose message counts the agents
   per reason, as kube-scheduler does: ``0/12 agents: 5 insufficient gpus, 4 taint
   spot=true:NoSchedule, 3 refuse filter`` (an agent may have several reasons).
3. A waiting gang (gangs.py) without a bundle outstanding is *unschedulable* when the cut finds
   fewer than its missing members (or they fit the agents but not the role's headroom). It gets
   a ``GangUnschedulable`` event (kind ``gang_unschedulable``) with explain's gang summary:
   ``3/8 tasks unplaceable: insufficient gpus on 5 agents``.
4. Rate limit, per demand: an event is recorded when its message differs from the last one
   recorded for the demand, or ``config.pending_event_repeat`` seconds after it (so a pending
   demand stays in the bounded log without flooding it). A demand that is schedulable at a scan
   (or met, withdrawn, or its framework gone) forgets its last message: failing again is news.
5. Cost: the fast test first (``Allocator.has_room`` for the shape, the room a gang cut uses,
   stopping at its first agent: any agent there means schedulable; asked once per framework
   and shape per scan for demands without constraints of their own, all of a framework's
   shapes in one ``Allocator.has_room_many``); the per-agent reasons are counted only for
   demands that fail it, once per framework and ``demands.reasons_key`` (shape, constraints,
   tolerations, spread) in a scan, for at most ``MAX_REASONED_PER_SCAN`` keys per scan (the
   least recently reasoned demands first; the rest wait for the next scan), over one
   ``AgentView`` on the agents' arrays kept across scans (agent_arrays.py: brought up to date
   at every scan by versions, so a scan pays for what changed since the last; while some
   framework has demands, every tick also sums the task rows of the agents whose tasks changed
   since the previous tick, at most ``agent_arrays.FOLLOW_TASKS_PER_TICK`` tasks' worth, so
   neither the scan nor the tick after a burst of launches sums them all), with each
   framework's refuse filters fetched once as arrays (``Allocator.held_back_masks``). A
   cluster with no demands pays one pass over its frameworks and the arrays' upkeep per
   scan. At most ``demand_work.SCAN_BUDGET`` demands are tested
   a scan, the least recently tested first (the others keep their last note); a shape larger
   than every agent needs no test (demand_work.py).
6. ``Scheduled`` (kind ``demand_scheduled``): an accept that launches tasks naming a demand
   records one event per demand, and the demand forgets its last message (rule 4).
"""

from __future__ import annotations

from collections.abc import Hashable
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from corral import events as cluster_events
from corral.master.allocator.interface import HeldBack, Scalars
from corral.master.core import commands as cmd
from corral.master.core import demand_work, demands, gangs
from corral.master.core import events as ev
from corral.master.core.agent_arrays import AgentArrays
from corral.master.core.agent_view import AgentView
from corral.master.core.pending_events import Key as Key
from corral.master.core.pending_events import Note as Note
from corral.master.core.pending_events import PendingEvents as PendingEvents
from corral.master.core.records import FrameworkRecord
from corral.master.core.states import FrameworkState
from corral.master.core.types import Demand

if TYPE_CHECKING:
    from corral.master.core.state import CoreState

MAX_REASONED_PER_SCAN = 32
_NEVER = -float("inf")
_FIRST_THREE = itemgetter(0, 1, 2)  # (last tested, framework, demand): a scan's order


def scan(core: CoreState, e: ev.Event) -> list[cmd.Command]:
    """Rules 1-5, after a cycle."""
    config = core.config
    state = core.pending
    if config.pending_event_interval <= 0 or e.now < state.scanned_at + (
        config.pending_event_interval
    ):
        if state.arrays is not None and config.pending_event_interval > 0 and _demanding(core):
            state.arrays.follow_tasks()  # rule 5: each tick's tasks, not 5 s of them at once
        return []
    state.scanned_at = e.now
    # Rule 5: the agents' arrays are brought up to date at every scan, reasons needed or not,
    # so each scan folds in what changed since the last (agents registered, tasks, offers) and
    # the scan that first needs reasons does not build them whole.
    if state.connected_version != core.largest.version:
        state.connected = demands.connected_agents(core)
        state.connected_version = core.largest.version
    agents = state.connected
    kept = state.arrays
    if kept is None:
        if agents:
            kept = state.arrays = AgentArrays(core.book, agents)
    else:
        kept = state.arrays = kept.refreshed(core.book, agents)
    before = state.notes
    # (last reasoned, framework, demand, kind) of the demands that failed the fast test
    failing: list[tuple[float, str, str, FrameworkRecord, Demand, str, dict[str, Any] | None]] = []
    roomy: dict[tuple[str, Scalars], bool] = {}  # the fast test per (framework, shape)
    pending: list[tuple[float, str, str, FrameworkRecord, Demand]] = []
    last_tested = state.tested.get
    for fw in core.frameworks.values():
        if (
            not fw.wants_by_demand
            or fw.state is not FrameworkState.SUBSCRIBED
            or fw.connection is None
            or fw.suppressed
        ):
            continue
        fw_id = fw.framework_id
        for d in fw.demands.values():
            if demands.unmet(fw, d) > 0:
                pending.append((last_tested((fw_id, d.name), _NEVER), fw_id, d.name, fw, d))
    # Rule 5's budget: the least recently tested first; the rest keep their notes.
    pending.sort(key=_FIRST_THREE)
    state.tested = {(x[1], x[2]): x[0] for x in pending}
    notes: dict[Key, Note] = {}
    tests = 0
    for _, fw_id, name, fw, d in pending:
        if tests >= demand_work.SCAN_BUDGET:
            note = before.get((fw_id, name))
            if note is not None:
                notes[(fw_id, name)] = note
            continue
        if core.quarantine.holds(fw_id, name, e.now):
            continue
        never = core.largest.never_fits(core, d.resources.scalars())
        if not never:
            tests += 1
        state.tested[(fw_id, name)] = e.now
        tested = core.quarantine.run(
            core, e, "why-pending test", fw_id, name, _test, core, fw, d, never, roomy, e
        )
        if tested is None or tested[0] is None:
            continue  # schedulable, or quarantined (quarantine.py)
        kind, gang = tested[0], tested[1]
        note = before.get((fw_id, name))
        last = note.reasoned_at if note is not None else _NEVER
        failing.append((last, fw_id, name, fw, d, kind, gang))
    failing.sort(key=_FIRST_THREE)
    out: list[cmd.Command] = []
    view: AgentView | None = None
    helds: dict[str, HeldBack | dict[str, str]] = {}  # per framework, for the scan
    # The reasons per framework and shape (demands.reasons_key): the same for every demand of
    # it during one scan, as the view, the refuse filters and the tasks stand still.
    by_shape: dict[Hashable, list[dict[str, Any]]] = {}
    counted = 0
    for _, fw_id, name, fw, d, kind, gang in failing:
        key = (fw_id, name)
        note = before.get(key)
        shape = demands.reasons_key(fw, d)
        known = by_shape.get(shape)
        if known is None and counted >= MAX_REASONED_PER_SCAN:
            if note is not None:
                notes[key] = note  # not looked at this scan: nothing to forget
            continue
        if view is None:  # once per scan, over the arrays brought up to date above
            view = AgentView(core, agents, kept, current=True)
        if known is None:
            held = helds.get(fw_id)
            if held is None:
                held = helds[fw_id] = demands.held_back_masks(core, fw, e.now)
            counted += 1
            known = core.quarantine.run(
                core, e, "why-pending reasons", fw_id, name,
                demands.demand_reasons, core, fw, d, agents, held, view,
            )  # fmt: skip
            if known is None:
                continue
            by_shape[shape] = known
        reasons = known
        if gang is None:
            if any(r["reason"] == demands.REASON_FITS for r in reasons):
                continue  # room only in its own offers: the framework's to use (rule 2)
            message = failed_scheduling_message(len(agents), reasons)
        else:
            message = demands.gang_summary(gang, reasons)
        if (
            note is not None
            and note.message == message
            and e.now < note.recorded_at + config.pending_event_repeat
        ):
            note.reasoned_at = e.now
            notes[key] = note
            continue
        notes[key] = Note(message, e.now, e.now)
        subject = cluster_events.demand_subject(fw_id, name)
        out.append(core.cluster_event(e, kind, subject, message))
    state.notes = notes
    return out


def _demanding(core: CoreState) -> bool:
    """Some framework has set demands (the next scan may reason over the arrays)."""
    return any(fw.demands for fw in core.frameworks.values())


def _test(
    core: CoreState,
    fw: FrameworkRecord,
    d: Demand,
    never: bool,
    roomy: dict[tuple[str, Scalars], bool],
    e: ev.Event,
) -> tuple[str | None, dict[str, Any] | None]:
    """Rules 2 and 3's test for one demand (a quarantine unit): (None, None) when it is
    schedulable, else its event kind and, for a waiting gang, explain's gang summary."""
    if gangs.waiting(fw, d):
        gang = gangs.explain(core, fw, d, e.now, never_fits=never)
        if gang["offered"] or (gang["placeable"] >= gang["members"] and not gang["over_headroom"]):
            return None, None
        return "gang_unschedulable", gang
    if not never and _room_somewhere(core, fw, d, e.now, roomy):
        return None, None
    return "demand_unschedulable", None


def _room_somewhere(
    core: CoreState,
    fw: FrameworkRecord,
    d: Demand,
    now: float,
    known: dict[tuple[str, Scalars], bool],
) -> bool:
    """Rule 5's fast test: some agent the framework may be offered has room for one task.
    Without constraints of its own a demand's answer is its framework's for the shape:
    ``known`` keeps those for the scan, asked at the first of them for every shape of the
    framework's unmet demands at once (``Allocator.has_room_many``)."""
    shape = d.resources.scalars()
    if not d.constraints:
        fid = fw.framework_id
        got = known.get((fid, shape))
        if got is None:
            shapes = list(
                dict.fromkeys(
                    [shape]
                    + [
                        s
                        for x in fw.demands.values()
                        if not x.constraints
                        and (fid, s := x.resources.scalars()) not in known
                        and demands.unmet(fw, x) > 0
                    ]
                )
            )
            answers = core.allocator.has_room_many(fid, now, shapes)
            known.update(zip([(fid, s) for s in shapes], answers, strict=True))
            got = answers[0]
        return got
    room = core.allocator.room(fw.framework_id, now, shape)
    if not len(room.agent_ids):
        return False
    allowed = gangs.demand_filter(core, d, fw)
    return allowed is None or any(allowed(str(a)) for a in room.agent_ids)


def failed_scheduling_message(agents: int, reasons: list[dict[str, Any]]) -> str:
    """``0/12 agents: 5 insufficient gpus, 4 taint spot=true:NoSchedule, 3 refuse filter``."""
    if not agents:
        return "0/0 agents: no agents connected"
    counted = ", ".join(
        f"{r['agents']} {r['reason']}" for r in reasons if r["reason"] != demands.REASON_FITS
    )
    return f"0/{agents} agents: {counted}"


def scheduled(
    core: CoreState, fw: FrameworkRecord, launched: dict[str, list[str]], e: ev.Event
) -> list[cmd.Command]:
    """Rule 6: ``launched`` is, per demand, the agents its tasks of this accept went to (one
    entry per task)."""
    out: list[cmd.Command] = []
    for name, on in launched.items():
        core.pending.forget(fw.framework_id, name)
        d = fw.demands[name]
        where = sorted(set(on))
        shown = ", ".join(where[:3]) + (f" and {len(where) - 3} more" if len(where) > 3 else "")
        tasks = f"{len(on)} task{'s' if len(on) != 1 else ''}"
        message = (
            f"{tasks} launched on agent{'s' if len(where) != 1 else ''} {shown}; "
            f"{demands.unmet(fw, d)} of {d.count} unmet"
        )
        subject = cluster_events.demand_subject(fw.framework_id, name)
        out.append(core.cluster_event(e, "demand_scheduled", subject, message))
    return out
