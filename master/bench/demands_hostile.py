"""``corral bench demands --hostile``: the allocation tick with demands that fit nowhere (issue
#30, item 6: 5 frameworks x 1,000 such demands made a tick take 11 s, GetState 15 s).

A ``MasterCore`` with N agents (``cpus:24;mem:4096;disk:4096``), each running one task of a
``batch`` framework (1 cpu, class ``batch``) and one of a ``serving`` framework (12 cpus, class
``serving``). ``frameworks`` hostile frameworks each set ``demands_each`` demands of the
``default`` class whose shapes are all different (``cpus:20.001``, ``cpus:20.002``, ...): each
fits an agent's total but not its free cpus (11), and preempting the batch task (the only one
of a lower class) frees too little, so preemption searches every agent for each demand and
finds nothing. An unrelated framework with no demands is offered what is free; the bench checks
that it is offered something every tick. Timed: ``core.handle(AllocationTick)`` (preemption,
the regular cycle, and the why-pending scan every ``pending_event_interval``) and the state
view (``views.state_json``, what GetState and /api/v1/state serve).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from corral.master import views
from corral.master.allocator import make_allocator
from corral.master.bench.demands import AGENT, _set, _subscribe
from corral.master.core import commands as cmd
from corral.master.core import events as ev
from corral.master.core.config import MasterConfig
from corral.master.core.master import MasterCore
from corral.master.core.types import AgentSpec, Demand, Status, TaskSource, TaskSpec, TaskState
from corral.resources import parse_resources


@dataclass
class HostileResult:
    agents: int
    frameworks: int
    demands_each: int
    ticks: int
    tick_median_ms: float
    tick_max_ms: float
    state_median_ms: float
    offered_unrelated_min: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _fill(core: MasterCore, fid: str, shape: str, klass: str, now: float) -> None:
    """One task of ``shape`` on each agent, launched from the framework's offers and RUNNING."""
    placed: set[str] = set()
    n = 0
    for seed in range(1000):
        if len(placed) == len(core.agents):
            return
        out = core.handle(ev.AllocationTick(stimulus_id="f", now=now, seed=seed))
        for sent in out:
            if not isinstance(sent, cmd.SendOffers):
                continue
            for o in sent.offers:
                tasks: tuple[TaskSpec, ...] = ()
                if sent.framework_id == fid and o.agent_id not in placed:
                    n += 1
                    tid = f"{klass}-{n}"
                    tasks = (TaskSpec(tid, tid, parse_resources(shape), priority_class=klass),)
                    placed.add(o.agent_id)
                core.handle(
                    ev.Accept(
                        stimulus_id="a",
                        now=now,
                        framework_id=sent.framework_id,
                        stream_id=core.frameworks[sent.framework_id].stream_id,
                        offer_ids=(o.offer_id,),
                        tasks=tasks,
                        refuse_seconds=1e9 if sent.framework_id == fid else 0.0,
                    )
                )
                for t in tasks:
                    core.handle(
                        ev.AgentStatusUpdates(
                            stimulus_id="u",
                            now=now,
                            agent_id=o.agent_id,
                            connection=core.agents[o.agent_id].connection or 0,
                            statuses=(
                                Status(t.task_id, fid, o.agent_id, TaskState.RUNNING,
                                       source=TaskSource.EXECUTOR),
                            ),
                        )
                    )  # fmt: skip
    raise RuntimeError(f"only {len(placed)} of {len(core.agents)} agents got a {klass} task")


def run(
    agents: int,
    frameworks: int,
    demands_each: int,
    ticks: int,
    clock: Callable[[], float],
    allocator: str = "numba",
) -> HostileResult:
    config = MasterConfig(launch_pacing=False, preemption_nomination_seconds=1.0)
    core = MasterCore(config, make_allocator(allocator), "bench")
    for i in range(agents):
        spec = AgentSpec(agent_id="", hostname=f"host-{i}", resources=parse_resources(AGENT))
        core.handle(
            ev.AgentRegister(
                stimulus_id="r", now=0.0, connection=i, spec=spec, new_agent_id=f"agent-{i}"
            )
        )
    now = 1.0
    for name, shape, klass in (
        ("batch", "cpus:1;mem:64", "batch"),
        ("serving", "cpus:12", "serving"),
    ):
        _fill(core, _subscribe(core, 0, name, gpu=False), shape, klass, now)
    for f in range(frameworks):
        fid = _subscribe(core, f, "hostile", gpu=False)
        shapes = (parse_resources(f"cpus:{20 + (f * demands_each + k + 1) / 1000:.3f}")
                  for k in range(demands_each))  # fmt: skip
        _set(core, fid, tuple(Demand(f"d{k}", s, count=1) for k, s in enumerate(shapes)))
    unrelated = _subscribe(core, 0, "unrelated", gpu=False)
    times: list[float] = []
    states: list[float] = []
    offered: list[int] = []
    for t in range(ticks + 1):  # the first tick warms up
        now += 1.0
        t0 = clock()
        out = core.handle(ev.AllocationTick(stimulus_id="t", now=now, seed=t))
        dt = clock() - t0
        kills = [c for c in out if isinstance(c, cmd.SendKill)]
        if kills:
            raise RuntimeError(f"the hostile demands preempted {len(kills)} tasks")
        got = 0
        for sent in out:
            if isinstance(sent, cmd.SendOffers):
                got += len(sent.offers) if sent.framework_id == unrelated else 0
                core.handle(
                    ev.Decline(
                        stimulus_id="x",
                        now=now,
                        framework_id=sent.framework_id,
                        stream_id=core.frameworks[sent.framework_id].stream_id,
                        offer_ids=tuple(o.offer_id for o in sent.offers),
                        refuse_seconds=0.0,
                    )
                )
        t1 = clock()
        views.state_json(core)
        if t:
            times.append(dt)
            states.append(clock() - t1)
            offered.append(got)
    return HostileResult(
        agents=agents,
        frameworks=frameworks,
        demands_each=demands_each,
        ticks=ticks,
        tick_median_ms=statistics.median(times) * 1e3,
        tick_max_ms=max(times) * 1e3,
        state_median_ms=statistics.median(states) * 1e3,
        offered_unrelated_min=min(offered),
    )
