"""``corral bench demands``: the master's allocation tick with pending demands, gangs among them.

A ``MasterCore`` with N agents (``cpus:24;mem:4096;disk:4096``; ``gpu_agents`` of them with
one GPU) and pending demands: ``regular`` frameworks with ``demands_each`` ordinary demands each
(counts that stay unmet), which have declined every agent with a long refuse filter (Mesos'
DeclineOffers steady state, installed directly), and one framework per gang, each with one gang
demand of 8 members. Timed: ``core.handle(AllocationTick)``, the whole tick (bundles cut by
gangs.py, the allocator's cycle, offers made), with the clock passed in. Phases:

* ``waiting``: gangs of 8 x ``gpus:1`` on a cluster with ``gpu_agents`` (< 8) GPUs: no bundle
  fits, so every tick cuts at nothing for every gang (the worst case: a full ``room`` per gang).
* ``cutting``: gangs of 8 x ``cpus:2;mem:256``: every tick cuts every gang's bundle; the gang
  frameworks decline them (refuse 0) after the timer, so the next tick cuts again.
* ``baseline``: the same cluster and regular demands with the gang demands withdrawn.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from corral.master.allocator import make_allocator
from corral.master.core import commands as cmd
from corral.master.core import events as ev
from corral.master.core.config import MasterConfig
from corral.master.core.master import MasterCore
from corral.master.core.types import AgentSpec, Demand, FrameworkSpec
from corral.resources import parse_resources

AGENT = "cpus:24;mem:4096;disk:4096"
GPU_AGENT = "cpus:24;mem:4096;disk:4096;gpus:1"
LONG = 1e12
PHASES = ("baseline", "waiting", "cutting")


@dataclass
class DemandTickResult:
    agents: int
    demands: int
    gangs: int
    ticks: int
    median_ms: dict[str, float]
    p99_ms: dict[str, float]
    bundles_per_cutting_tick: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _subscribe(core: MasterCore, i: int, name: str, gpu: bool) -> str:
    out = core.handle(
        ev.FrameworkSubscribe(
            stimulus_id="s",
            now=0.0,
            connection=10**7 + i,
            spec=FrameworkSpec(framework_id="", name=name, gpu_resources=gpu),
            new_framework_id=f"{name}-{i}",
            stream_id=f"stream-{name}-{i}",
        )
    )
    return next(c.framework_id for c in out if isinstance(c, cmd.SendSubscribed))


def _set(core: MasterCore, fid: str, demands: tuple[Demand, ...]) -> None:
    core.handle(
        ev.SetDemands(
            stimulus_id="d",
            now=0.0,
            framework_id=fid,
            stream_id=core.frameworks[fid].stream_id,
            demands=demands,
        )
    )


def _gang(shape: str) -> tuple[Demand, ...]:
    return (Demand("train", parse_resources(shape), count=8, min_member=8),)


def run(
    agents: int,
    demands: int,
    gangs: int,
    ticks: int,
    clock: Callable[[], float],
    allocator: str = "numba",
    gpu_agents: int = 7,
    demands_each: int = 9,
) -> DemandTickResult:
    # Pacing off: the tick is timed cutting every bundle, not a launch window's share of them.
    core = MasterCore(MasterConfig(launch_pacing=False), make_allocator(allocator), "bench")
    plain, gpu = parse_resources(AGENT), parse_resources(GPU_AGENT)
    for i in range(agents):
        spec = AgentSpec(
            agent_id="", hostname=f"host-{i}", resources=gpu if i < gpu_agents else plain
        )
        core.handle(
            ev.AgentRegister(
                stimulus_id="r", now=0.0, connection=i, spec=spec, new_agent_id=f"agent-{i}"
            )
        )
    agent_ids = sorted(core.agents)
    regular = max(0, demands - gangs)
    shape = parse_resources("cpus:1;mem:128")
    for i in range((regular + demands_each - 1) // demands_each):
        fid = _subscribe(core, i, "regular", gpu=False)
        n = min(demands_each, regular - i * demands_each)
        _set(core, fid, tuple(Demand(f"d{k}", shape, count=1000) for k in range(n)))
        core.allocator.add_filters(fid, agent_ids, LONG)  # type: ignore[attr-defined]
    gang_ids = [_subscribe(core, i, "gang", gpu=True) for i in range(gangs)]

    now = 1.0
    times: dict[str, list[float]] = {p: [] for p in PHASES}
    bundles: list[int] = []
    for phase in PHASES:
        for fid in gang_ids:
            if phase == "baseline":
                _set(core, fid, ())
            elif phase == "waiting":
                _set(core, fid, _gang("cpus:1;mem:128;gpus:1"))
            else:
                _set(core, fid, _gang("cpus:2;mem:256"))
        for t in range(ticks + 1):  # the first tick of a phase warms up
            now += 1.0
            t0 = clock()
            out = core.handle(ev.AllocationTick(stimulus_id="t", now=now, seed=t))
            dt = clock() - t0
            sent = [c for c in out if isinstance(c, cmd.SendOffers)]
            if phase == "waiting" and any(o.gang_id for c in sent for o in c.offers):
                raise RuntimeError("a gang was cut on a cluster too small for it")
            if t:
                times[phase].append(dt)
            if phase == "cutting":
                if t:
                    bundles.append(len({o.gang_id for c in sent for o in c.offers if o.gang_id}))
                for c in sent:
                    core.handle(
                        ev.Decline(
                            stimulus_id="x",
                            now=now,
                            framework_id=c.framework_id,
                            stream_id=core.frameworks[c.framework_id].stream_id,
                            offer_ids=tuple(o.offer_id for o in c.offers),
                            refuse_seconds=0.0,
                        )
                    )

    def p99(values: list[float]) -> float:
        ordered = sorted(values)
        return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] * 1e3

    return DemandTickResult(
        agents=agents,
        demands=demands,
        gangs=gangs,
        ticks=ticks,
        median_ms={p: statistics.median(v) * 1e3 for p, v in times.items()},
        p99_ms={p: p99(v) for p, v in times.items()},
        bundles_per_cutting_tick=statistics.mean(bundles) if bundles else 0.0,
    )
