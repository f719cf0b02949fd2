"""``DrfAllocator.cycle``: one allocation cycle of the numpy allocator, from the agents' walk
order to the returned ``Plan``.

The rules kept (reference.py's CYCLE): expired filters drop first; agents are walked in
registration order permuted by the seed; one pass per priority level of the active frameworks,
highest first (order.py); the cycle stops once the plan holds ``cpus`` cpus, added up offer by
offer in plan order.

Why it is cheap: the candidates of a pass are chosen with a few vector operations over the
agents (or one compiled loop, ``fastpath_compiled.select``): only agents that are not draining,
have some framework eligible (``count_ok``) and something allocatable free are walked. The walk
itself is one of three, each charging the allocator as it goes: ``fastpath`` (one role, no
quota, no reservations or PreferNoSchedule taints on the candidates), else ``general_walk``
(numba kernel) or ``general_walk_numpy`` (numpy kernel).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, cast

import numpy as np
import numpy.typing as npt

from corral.master.allocator import fastpath, general_walk, general_walk_numpy, order
from corral.master.allocator import fastpath_compiled as compiled
from corral.master.allocator.interface import Plan

if TYPE_CHECKING:
    from corral.master.allocator.numpy_allocator import DrfAllocator

F64 = npt.NDArray[np.float64]


def run(al: DrfAllocator, now: float, seed: int, cpus: float = math.inf) -> Plan:
    """``Allocator.cycle``."""
    al._fit_cache.sweep()
    if al.filters.expire(now):
        al._recount()
    al._last_plan_frameworks = np.zeros(0, dtype=np.intp)
    if not al.count_ok[: al._agents.size].any():
        return Plan([], [])  # every agent filtered (or blocked) for every active framework
    agents = ordered_agents(al)
    order_ = agents[np.random.default_rng(seed).permutation(len(agents))]
    m = al._frameworks.size
    passes = order.levels(al.fw_priority, np.flatnonzero(al.fw_active[:m]))
    walked: list[fastpath.Walked] = []
    planned = 0.0  # cpus planned by the passes before, added up as the reference does
    for active in passes:
        if planned >= cpus:
            break
        part = _pass(al, order_, active, m, cpus, planned)
        if part is None:
            continue
        walked.append(part)
        if cpus != math.inf and len(passes) > 1:
            for x in part.offers[:, 0].tolist():
                planned += x
    if not walked:
        return Plan([], [])
    if len(walked) == 1:
        frameworks, agents, offers = walked[0]
    else:
        frameworks = np.concatenate([w.frameworks for w in walked])
        agents = np.concatenate([w.agents for w in walked])
        offers = np.concatenate([w.offers for w in walked]).reshape(-1, 4)
    al._last_plan_frameworks = frameworks
    al._fit_cache.charged_many(agents, al._free_for)  # the walk charged in place
    # Rows in a plan are live, so their ids are set (never None).
    fw_ids = cast(list[str], al._frameworks.table())
    agent_ids = cast(list[str], al._agents.table())
    return Plan.from_rows(fw_ids, frameworks, agent_ids, agents, offers)


def ordered_agents(al: DrfAllocator) -> npt.NDArray[np.intp]:
    """The live agent rows in registration order (kept until the agents change)."""
    if al._agent_order is None:
        live = al._live_agents()
        al._agent_order = live[np.argsort(al.agent_seq[live], kind="stable")]
    return al._agent_order


def select(
    al: DrfAllocator, order: npt.NDArray[np.intp]
) -> tuple[npt.NDArray[np.intp], F64, bool, bool]:
    """See ``fastpath_compiled.select``; the numpy kernel selects the same with array ops."""
    n = al._agents.size
    if al.kernel == "numba":
        return compiled.select(
            order, al.count_ok[:n], al.draining[:n], al.capacity[:n], al.used[:n],
            al.reservations.free_sum[:n], al.placement.has_soft_taints[:n],
            al._min_array,
        )  # fmt: skip
    order = order[(al.count_ok[order] > 0) & ~al.draining[order]]
    unreserved = al._unreserved_free(order)
    offerable = allocatable_rows(al, unreserved + al.reservations.free_sum[order])
    candidates = order[offerable]
    reserved = bool(al.reservations.free_sum[candidates].any())
    soft = bool(al.placement.has_soft_taints[candidates].any())
    return candidates, unreserved[offerable], reserved, soft


def allocatable_rows(al: DrfAllocator, offers: F64) -> npt.NDArray[np.bool_]:
    """``options.allocatable`` of each row of ``offers``."""
    met = np.zeros(offers.shape[0], dtype=np.bool_)
    for row in al._min_array:
        met |= (offers >= row).all(axis=1)
    return met


def _pass(
    al: DrfAllocator,
    order_: npt.NDArray[np.intp],
    active: npt.NDArray[np.intp],
    m: int,
    cpus: float,
    planned: float,
) -> fastpath.Walked | None:
    """One pass of the cycle (order.py): the agents in ``order_`` walked for the framework
    rows ``active`` (one priority level), ``planned`` cpus already in the plan."""
    candidates, free, reserved, soft = select(al, order_)
    if not len(candidates):
        return None
    if not reserved and not soft and fastpath.applies(al, active):
        # No candidate has reservations, so its free resources are the unreserved ones.
        if cpus == math.inf:
            return fastpath.walk(al, candidates, free, active, m)
        return walk_within(al, candidates, free, active, m, cpus, planned)
    if al.kernel == "numba":
        al.general_walks += 1
        return general_walk.walk(al, candidates, free, active, m, cpus, planned)
    return general_walk_numpy.walk(al, candidates, active, m, cpus, planned)


def walk_within(
    al: DrfAllocator,
    candidates: npt.NDArray[np.intp],
    free: F64,
    active: npt.NDArray[np.intp],
    m: int,
    cpus: float,
    planned: float = 0.0,
) -> fastpath.Walked:
    """The fast walk up to ``cpus`` (see ``run``), in runs of agents: each run is the
    shortest whose free cpus, were they all offered, would reach what is left. An agent
    offers at most what it has free, so the plan cannot reach the budget before a run's
    last agent, and a walk carries on where the previous run left it (it charges as it
    goes): the runs make the plan that one walk stopped at the budget would make. The
    cpus are added up one by one in walk order, as the reference does, so the two stop
    at the same agent."""
    column = free[:, 0]
    # Read into Python as far as the walk goes, in doubling chunks: a paced cycle's budget is a
    # few agents of thousands, and the whole column as a list was ~2 % of a 10k-agent master.
    free_cpus: list[float] = []
    chunk = 4
    parts: list[fastpath.Walked] = []
    start, n = 0, len(column)
    while start < n and planned < cpus:
        reach, end = planned, start
        while end < n and reach < cpus:
            if end == len(free_cpus):
                free_cpus += column[end : end + chunk].tolist()
                chunk *= 2
            reach += free_cpus[end]
            end += 1
        part = fastpath.walk(al, candidates[start:end], free[start:end], active, m)
        for x in part.offers[:, 0].tolist():
            planned += x
        parts.append(part)
        start = end
    if len(parts) == 1:
        return parts[0]
    if not parts:
        return fastpath.Walked.of([])
    return fastpath.Walked(
        np.concatenate([p.frameworks for p in parts]),
        np.concatenate([p.agents for p in parts]),
        np.concatenate([p.offers for p in parts]).reshape(-1, 4),
    )
