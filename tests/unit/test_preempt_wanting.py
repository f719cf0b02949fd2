"""Preemption's pass with its kept demands (preempt_wanting.py) and its rotation read lazily
(``Rotation.ordered``) decides exactly as the pass made from scratch at every tick: two cores
driven by the same random events (agents, low-priority tasks to preempt, demands of classes
that may and may not preempt, tasks naming demands starting and ending, priority classes set
and deleted, ticks), one of them rebuilding every framework's list and sorting the whole
rotation each tick, answer every event with the same commands. validate() runs after every
event in both (it holds each kept list equal to a new one while its versions stand)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from itertools import zip_longest
from typing import Any
from unittest.mock import patch

import hypothesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corral.master.core import commands as cmd
from corral.master.core import demand_work
from corral.master.core import events as ev
from corral.master.core.config import MasterConfig
from corral.master.core.demand_bounds import Rotation
from corral.master.core.preempt_wanting import Entry, PreemptWanting, entries, lowest_value
from corral.master.core.priority_table import PriorityTable
from corral.master.core.records import FrameworkRecord
from corral.master.core.refusals import CallRejected
from corral.master.core.types import TaskState
from corral.priority import PreemptionPolicy, PriorityClass
from tests.unit.core_harness import Harness, demand, of, status, task

SHAPES = ["cpus:1;mem:128", "cpus:2;mem:256", "cpus:3;mem:128", "cpus:9;mem:64"]
CLASSES = ["serving", "", "batch", "gold"]
STEPS = st.sampled_from(
    [
        "agent",
        "fill",
        "fill",
        "demands",
        "demands",
        "accept",
        "finish",
        "class",
        "tick",
        "tick",
        "tick",
    ]
)


class _FromScratch(PreemptWanting):
    """Every framework's list made again at every tick."""

    def of(self, fw: FrameworkRecord, priority: PriorityTable) -> tuple[list[Entry], float]:
        made = entries(fw, priority)
        return made, lowest_value(made)


def _rounds(rotation: Rotation, entries: list[Any]) -> list[Any]:
    """demand_work.py rule 3's order made the plain way, as the rotation was before it was read
    lazily: per class value, highest first, every framework's queue sorted by (last served,
    name), the queues read in rounds, the frameworks in their turns' order."""
    want = []
    for value in sorted({e[0] for e in entries}, reverse=True):
        of_class = [e for e in entries if e[0] == value]
        turns = sorted(
            {e[1] for e in of_class}, key=lambda f: (rotation.frameworks.get(f, -math.inf), f)
        )
        queues = []
        for fw in turns:
            queue = sorted(
                (e for e in of_class if e[1] == fw), key=lambda e: (rotation.since(fw, e[2]), e[2])
            )
            queues.append([e[3] for e in queue])
        for round_ in zip_longest(*queues):
            want += [x for x in round_ if x is not None]
    return want


class _Sorted(Rotation):
    """The whole rotation sorted at every tick, as before it was read lazily."""

    def ordered(self, entries: list[Any]) -> Iterator[Any]:
        return iter(_rounds(self, entries))


def _seen(out: list[cmd.Command]) -> list[Any]:
    """The commands, offers as (framework, offer id, agent, scalars)."""
    seen: list[Any] = []
    for c in out:
        if isinstance(c, cmd.SendOffers):
            seen.append(
                (c.framework_id, [(o.offer_id, o.agent_id, tuple(o.scalars)) for o in c.offers])
            )
        else:
            seen.append(repr(c))
    return seen


class _Pair:
    """The same events to both cores; their answers compared."""

    def __init__(self, config: MasterConfig) -> None:
        self.kept = Harness(config=config)
        self.scratch = Harness(config=config)
        self.scratch.core.preempt_wanting = _FromScratch()
        self.scratch.core.preempt_rotation = _Sorted()

    def both(self, call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``call(harness, *args, **kwargs)`` on each harness; the kept core's answer (both
        equal)."""
        got: list[tuple[str, Any]] = []
        for h in (self.kept, self.scratch):
            try:
                got.append(("ok", call(h, *args, **kwargs)))
            except CallRejected as exc:
                got.append(("refused", str(exc)))
        (how, a), (_, b) = got
        if how == "ok" and isinstance(a, list):
            assert _seen(a) == _seen(b)
        elif how == "ok" and isinstance(a, tuple):  # (id, commands)
            assert a[0] == b[0] and _seen(a[1]) == _seen(b[1])
        else:
            assert got[0] == got[1]
        return a

    def event(self, make: Callable[[Harness], ev.Event]) -> list[cmd.Command]:
        out: list[cmd.Command] = self.both(lambda h, make: h.handle(make(h)), make)
        return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_the_kept_pass_decides_as_the_pass_made_from_scratch(data: st.DataObject) -> None:
    # Small budgets, so the rotation's order decides which demands are searched this tick.
    searches = data.draw(st.sampled_from([1, 2, demand_work.PREEMPTION_SEARCHES]))
    victims = data.draw(st.sampled_from([1, 3, 64]))
    with patch.object(demand_work, "PREEMPTION_SEARCHES", searches):
        _program(data, _Pair(MasterConfig(preemption_max_victims_per_cycle=victims)))


def _program(data: st.DataObject, p: _Pair) -> None:
    batch = p.both(Harness.subscribe, "batch")[0]
    fws = [p.both(Harness.subscribe, f"f{k}")[0] for k in range(3)]
    agents: list[str] = []
    running: list[tuple[str, str, str]] = []  # (framework, task, agent)
    n = 0
    for _ in range(data.draw(st.integers(10, 60))):
        step = data.draw(STEPS)
        if step == "agent" or not agents:
            cpus = data.draw(st.sampled_from([4, 8]))
            res = f"cpus:{cpus};mem:4096;disk:1000"
            agents.append(p.both(Harness.add_agent, resources=res)[0])
        elif step == "fill":
            # Low-priority tasks on whatever the batch framework is offered: victims. The
            # others' offers are declined, so the batch framework is offered them next.
            for _ in range(3):
                out = p.event(lambda h: ev.AllocationTick(**h.base(), seed=7))
                for sent in of(cmd.SendOffers, out):
                    if sent.framework_id != batch:
                        p.event(_decline(sent))
                        continue
                    for o in sent.offers:
                        tasks = []
                        for _ in range(int(o.scalars[0])):  # as many 1-cpu tasks as fit
                            n += 1
                            tasks.append(task(f"b{n}", "cpus:1;mem:128", priority_class="batch"))
                        p.both(Harness.accept, batch, [o.offer_id], *tasks, refuse=0)
                        live = p.kept.core.frameworks[batch].tasks
                        up = [
                            status(t.task_id, batch, o.agent_id, TaskState.RUNNING)
                            for t in tasks
                            if t.task_id in live
                        ]
                        if up:
                            p.both(Harness.agent_updates, o.agent_id, *up)
                            running += [(batch, u.task_id, o.agent_id) for u in up]
        elif step == "demands":
            fid = data.draw(st.sampled_from(fws))
            picks = data.draw(
                st.lists(
                    st.tuples(
                        st.sampled_from(SHAPES),
                        st.sampled_from(CLASSES),
                        st.integers(1, 3),
                    ),
                    max_size=4,
                )
            )
            wanted = [
                demand(f"d{k}", shape, count=c, priority_class=pc)
                for k, (shape, pc, c) in enumerate(picks)
            ]
            p.both(Harness.set_demands, fid, *wanted)
        elif step == "accept":
            # A task naming one of a framework's demands: its unmet count moves.
            wanting = [f for f in fws if p.kept.core.frameworks[f].demands]
            if not wanting:
                continue
            fid = data.draw(st.sampled_from(wanting))
            names = list(p.kept.core.frameworks[fid].demands)
            offers = []
            for _ in range(2):
                out = p.event(lambda h: ev.AllocationTick(**h.base(), seed=7))
                for sent in of(cmd.SendOffers, out):
                    if sent.framework_id == fid and not offers:
                        offers = [o for o in sent.offers if o.scalars[0] >= 1]
                    if sent.framework_id != fid or not offers:
                        p.event(_decline(sent))
                if offers:
                    break
            if offers:
                o = offers[0]
                n += 1
                name = data.draw(st.sampled_from(names))
                t = task(f"t{n}", "cpus:1;mem:64", demand=name, priority_class="serving")
                p.both(Harness.accept, fid, [o.offer_id], t, refuse=0)
                if f"t{n}" in p.kept.core.frameworks[fid].tasks:
                    running.append((fid, f"t{n}", o.agent_id))
                    hypothesis.event("launched for a demand")
                rest = [x.offer_id for x in offers[1:]]
                if rest:
                    p.event(
                        lambda h, rest=rest, fid=fid: ev.Decline(
                            **h.call_base(fid), offer_ids=tuple(rest), refuse_seconds=0.0
                        )
                    )
        elif step == "finish" and running:
            fid, tid, aid = running.pop(data.draw(st.integers(0, len(running) - 1)))
            if tid in p.kept.core.frameworks[fid].tasks:
                hypothesis.event("finished")
                done = status(tid, fid, aid, TaskState.FINISHED)
                p.both(Harness.agent_updates, aid, done)
        elif step == "class":
            if data.draw(st.booleans()):
                pc = PriorityClass(
                    "gold",
                    data.draw(st.sampled_from([50, 500, 5000])),
                    data.draw(st.sampled_from(list(PreemptionPolicy))),
                )
                p.event(lambda h, pc=pc: ev.SetPriorityClass(**h.base(), priority_class=pc))
            else:
                p.event(lambda h: ev.DeletePriorityClass(**h.base(), name="gold"))
        elif step == "tick":
            advance = data.draw(st.sampled_from([0.5, 1.0, 10.0]))
            p.kept.now += advance
            p.scratch.now += advance
            out = p.event(lambda h: ev.AllocationTick(**h.base(), seed=7))
            hypothesis.event(f"preempted {min(len(of(cmd.SendKill, out)), 1)}")
            # Offers made are declined (so the agents are offered again), as frameworks do.
            for sent in of(cmd.SendOffers, out):
                p.event(_decline(sent))


def _decline(sent: cmd.SendOffers) -> Callable[[Harness], ev.Event]:
    ids = tuple(o.offer_id for o in sent.offers)
    return lambda h: ev.Decline(**h.call_base(sent.framework_id), offer_ids=ids, refuse_seconds=0.0)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from([0, 10, 1000]), st.sampled_from("abcd"), st.integers(0, 30)),
        max_size=60,
        unique_by=lambda x: (x[1], x[2]),
    ),
    st.lists(st.tuples(st.sampled_from("abcd"), st.integers(0, 30), st.integers(0, 5))),
)
def test_the_rotation_read_lazily_is_the_rotation_sorted(
    demands: list[tuple[int, str, int]], served: list[tuple[str, int, int]]
) -> None:
    """``Rotation.ordered`` (and ``order``, its list) yields demand_work.py rule 3's order made
    the plain way (``_rounds``), whatever was served before; ``served`` while reading it changes
    nothing of what it yields."""
    rotation = Rotation()
    for fw, k, now in served:
        rotation.served(fw, f"d{k}", float(now))
    entries = [(v, fw, f"d{k}", (v, fw, k)) for v, fw, k in demands]
    want = _rounds(rotation, entries)
    assert rotation.order(entries) == want
    got = []
    for item in rotation.ordered(entries):
        got.append(item)
        rotation.served(item[1], f"d{item[2]}", 100.0)  # as preemption's pass does
    assert got == want
