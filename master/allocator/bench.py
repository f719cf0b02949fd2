"""The allocator benchmark: Mesos' DeclineOffers shape, numpy and reference in the same run.

Shape (as in Mesos' hierarchical allocator benchmark): agents ``cpus:24;mem:4096;disk:4096``,
each already running ``cpus:16;mem:2014;disk:1024`` for framework ``i % F``; every framework
declines every offer with a long refuse filter. Two phases per shape:

* ``offer`` cycles: the first ``cycles`` rounds of that loop; every agent's remainder is offered
  (to a framework that has not filtered it yet), then declined.
* ``piled`` cycles: the state after the loop has run until every framework has filtered every
  agent (what Mesos reaches after F rounds), installed directly; then ``cycles`` rounds in which
  the allocator must find that nothing is offerable. ``median_ms``/``p99_ms`` are these.

And ``paced`` cycles (``paced_median_ms``), on an allocator of their own: a paced master's cycle,
with a budget of ``budget`` cpus (a launch window's worth, a few agents' remainders), on the state
after the agents registered; each plan is given back unfiltered. (On their own since a plan given
back still moves the sorters' tie-breaks: the phases after would depend on how many ran.)

``roles``: the frameworks spread round-robin over roles ``r0..r{N-1}`` with weights
``1 + i % 3`` (one role: Mesos' ``*``). ``quota``: the first role is guaranteed 10 % of the
cluster's cpus and limited to 20 % (its frameworks run ~1/N of the tasks, so with 10 roles the
guarantee is unmet and the headroom rules apply).

The timer wraps ``cycle()`` only. The clock is passed in (``time.perf_counter`` from the CLI):
nothing under master/allocator reads time itself.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from corral.master.allocator.interface import Plan
from corral.master.allocator.numpy_allocator import DrfAllocator, Kernel
from corral.master.allocator.reference import ReferenceAllocator

AGENT = (24.0, 4096.0, 4096.0, 0.0)
RUNNING = (16.0, 2014.0, 1024.0, 0.0)
LONG = 1e12  # refuse filter expiry: "forever" for the benchmark
BUDGET = 200.0  # cpus of a paced cycle: 25 agents' remainders (8 cpus each)
PlanRows = list[tuple[str, str, tuple[float, ...]]]


@dataclass
class ShapeResult:
    agents: int
    frameworks: int
    cycles: int
    roles: int
    quota: bool
    median_ms: float
    p99_ms: float
    offer_median_ms: float
    offers_per_offer_cycle: float
    paced_median_ms: float
    budget: float
    reference_median_ms: float | None = None
    reference_offer_median_ms: float | None = None
    reference_cycles: int = 0
    reference_skipped: str | None = None
    speedup: float | None = None
    agree: bool | None = None
    state_bytes: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class PhaseTimes:
    offer_ms: list[float] = field(default_factory=list)
    piled_ms: list[float] = field(default_factory=list)
    offers: list[int] = field(default_factory=list)
    plans: list[PlanRows] = field(default_factory=list)


Alloc = DrfAllocator | ReferenceAllocator


def role_names(roles: int) -> list[str]:
    return ["*"] if roles == 1 else [f"r{i}" for i in range(roles)]


def build(
    alloc: Alloc, agents: int, frameworks: int, roles: int = 1, quota: bool = False
) -> tuple[list[str], list[str]]:
    agent_ids = [f"agent-{i}" for i in range(agents)]
    fw_ids = [f"framework-{i}" for i in range(frameworks)]
    names = role_names(roles)
    for i, fid in enumerate(fw_ids):
        alloc.add_framework(fid, names[i % roles])
    if roles > 1:
        for i, name in enumerate(names):
            alloc.set_weight(name, 1.0 + i % 3)
    for i, aid in enumerate(agent_ids):
        alloc.add_agent(aid, AGENT, {}, [])
        alloc.allocate(fw_ids[i % frameworks], aid, RUNNING)
    if quota:
        cpus = AGENT[0] * agents
        inf = float("inf")
        alloc.set_quota(names[0], (0.1 * cpus, 0.0, 0.0, 0.0), (0.2 * cpus, inf, inf, inf))
    return agent_ids, fw_ids


Clock = Callable[[], float]


def _timed(
    alloc: Alloc, now: float, seed: int, clock: Clock, cpus: float = math.inf
) -> tuple[float, Plan]:
    start = clock()
    plan = alloc.cycle(now, seed, cpus)
    return (clock() - start) * 1000.0, plan


def _decline(alloc: Alloc, plan: Plan, now: float) -> None:
    by_framework: dict[str, list[str]] = {}
    for offer in plan:
        alloc.recover(offer.framework_id, offer.agent_id, offer.scalars)
        by_framework.setdefault(offer.framework_id, []).append(offer.agent_id)
    for fid, aids in by_framework.items():
        alloc.add_filters(fid, aids, now + LONG)


def run_phases(
    alloc: Alloc,
    agents: int,
    frameworks: int,
    offer_cycles: int,
    piled_cycles: int,
    seed: int,
    clock: Clock,
    tick: Callable[[], None] = lambda: None,
    roles: int = 1,
    quota: bool = False,
) -> PhaseTimes:
    agent_ids, fw_ids = build(alloc, agents, frameworks, roles, quota)
    out = PhaseTimes()
    now = 0.0
    for i in range(offer_cycles):
        ms, plan = _timed(alloc, now, seed + i, clock)
        out.offer_ms.append(ms)
        out.offers.append(len(plan))
        out.plans.append([(a.framework_id, a.agent_id, a.scalars) for a in plan])
        _decline(alloc, plan, now)
        now += 1.0
        tick()
    for fid in fw_ids:  # the loop run to saturation: every framework filtered every agent
        alloc.add_filters(fid, agent_ids, now + LONG)
    for i in range(piled_cycles):
        ms, plan = _timed(alloc, now, seed + offer_cycles + i, clock)
        out.piled_ms.append(ms)
        out.plans.append([(a.framework_id, a.agent_id, a.scalars) for a in plan])
        _decline(alloc, plan, now)
        now += 1.0
        tick()
    return out


def run_paced(
    alloc: Alloc,
    agents: int,
    frameworks: int,
    cycles: int,
    seed: int,
    clock: Clock,
    tick: Callable[[], None] = lambda: None,
    roles: int = 1,
    quota: bool = False,
    budget: float = BUDGET,
) -> tuple[list[float], list[PlanRows]]:
    """``cycles`` paced cycles of ``budget`` cpus on the state after the agents registered,
    each plan given back unfiltered: (times in ms, plans)."""
    build(alloc, agents, frameworks, roles, quota)
    times: list[float] = []
    plans: list[PlanRows] = []
    for i in range(cycles):
        ms, plan = _timed(alloc, 0.0, seed + i, clock, budget)
        times.append(ms)
        plans.append([(a.framework_id, a.agent_id, a.scalars) for a in plan])
        for offer in plan:
            alloc.recover(offer.framework_id, offer.agent_id, offer.scalars)
        tick()
    return times, plans


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


def run_shape(
    agents: int,
    frameworks: int,
    cycles: int,
    seed: int,
    reference_max_agents: int,
    reference_cycles: int,
    clock: Clock,
    tick: Callable[[], None] = lambda: None,
    kernel: Kernel = "numba",
    roles: int = 1,
    quota: bool = False,
    budget: float = BUDGET,
) -> ShapeResult:
    fast = DrfAllocator(kernel=kernel)
    times = run_phases(fast, agents, frameworks, cycles, cycles, seed, clock, tick, roles, quota)
    paced_ms, paced = run_paced(
        DrfAllocator(kernel=kernel), agents, frameworks, cycles, seed, clock, tick, roles, quota,
        budget,
    )  # fmt: skip
    result = ShapeResult(
        agents=agents,
        frameworks=frameworks,
        cycles=cycles,
        roles=roles,
        quota=quota,
        median_ms=statistics.median(times.piled_ms),
        p99_ms=p99(times.piled_ms),
        offer_median_ms=statistics.median(times.offer_ms),
        offers_per_offer_cycle=statistics.mean(times.offers),
        paced_median_ms=statistics.median(paced_ms),
        budget=budget,
        state_bytes=fast.state_bytes(),
    )
    if agents > reference_max_agents:
        result.reference_skipped = f"agents > --reference-max-agents ({reference_max_agents})"
        return result
    n = min(cycles, reference_cycles)
    ref = run_phases(
        ReferenceAllocator(), agents, frameworks, n, n, seed, clock, roles=roles, quota=quota
    )
    _, ref_paced = run_paced(
        ReferenceAllocator(), agents, frameworks, n, seed, clock, roles=roles, quota=quota,
        budget=budget,
    )  # fmt: skip
    result.reference_cycles = n
    result.reference_median_ms = statistics.median(ref.piled_ms)
    result.reference_offer_median_ms = statistics.median(ref.offer_ms)
    result.speedup = result.reference_median_ms / max(result.median_ms, 1e-9)
    # Same seeds and same history: the first n offer, n piled and n paced cycles must agree.
    fast_plans = times.plans[:n] + times.plans[cycles : cycles + n] + paced[:n]
    result.agree = fast_plans == ref.plans + ref_paced
    return result


def memory_at(agents: int, frameworks: int, kernel: Kernel = "numba") -> int:
    """Bytes of the numpy allocator's arrays for a piled-up cluster of this size."""
    alloc = DrfAllocator(kernel=kernel)
    agent_ids, fw_ids = build(alloc, agents, frameworks)
    for fid in fw_ids:
        alloc.add_filters(fid, agent_ids, LONG)
    return alloc.state_bytes()
