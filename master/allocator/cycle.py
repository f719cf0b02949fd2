"""``DrfAllocator.cycle``: one allocation cycle of the numpy allocator, from the agents' walk
order to the returned ``Plan``.

The rules kept (reference.py's CYCLE): expired filters drop first; agents are walked in
registration order permuted by the seed; one pass per priority level of the active frameworks,
highest first (order.py); the cycle stops once the plan holds ``cpus`` cpus, added up offer by
offer in plan order.

Why it is cheap: the candidates of a pass are chosen with one loop (``select``, a kernel like
the walks: compiled, or its own source for the numpy allocator): only agents that are not
draining, have some framework eligible (``count_ok``) and something allocatable free are walked.
A paced cycle (a cpus budget) selects a slice of the walk order at a time, as far as its walk
goes (``_selected``): its budget is a few agents of thousands.
The walk itself is one of two kernels, each charging the allocator as it goes: ``fastpath`` (one
role, no quota, no reservations or PreferNoSchedule taints on the candidates), else
``general_walk``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NamedTuple, cast

import numpy as np
import numpy.typing as npt

from corral.master.allocator import eligibility, fastpath, general_walk, order
from corral.master.allocator.interface import Plan
from corral.master.allocator.jit import compiled, prefetch, python

if TYPE_CHECKING:
    from corral.master.allocator.arrays import AllocatorArrays

F64 = npt.NDArray[np.float64]
SELECT_AHEAD = 16  # agents whose rows are asked for ahead (jit.prefetch)
SELECT_FIRST = 64  # agents of the walk order a paced pass selects first (``_selected``)


def run(al: AllocatorArrays, now: float, seed: int, cpus: float = math.inf) -> Plan:
    """``Allocator.cycle``."""
    al._fit_cache.sweep()
    eligibility.sweep(al, now)
    al._last_plan_frameworks = np.zeros(0, dtype=np.intp)
    if not al.count_ok[: al._agents.size].any():
        return Plan([], [])  # every agent filtered (or blocked) for every active framework
    agents = ordered_agents(al)
    order_ = agents[np.random.default_rng(seed).permutation(len(agents))]
    m = al._frameworks.size
    # The dynamic rules' masks at now (eligibility.py), the same for every pass.
    masks = Masks(eligibility.closed_agents(al, now), eligibility.blocked_pairs(al, now))
    passes = order.levels(al.fw_priority, eligibility.open_frameworks(al, now))
    walked: list[fastpath.Walked] = []
    planned = 0.0  # cpus planned by the passes before, added up as the reference does
    for active in passes:
        if planned >= cpus:
            break
        part = _pass(al, order_, active, m, cpus, planned, masks)
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


def ordered_agents(al: AllocatorArrays) -> npt.NDArray[np.intp]:
    """The live agent rows in registration order (kept until the agents change)."""
    if al._agent_order is None:
        live = al._live_agents()
        al._agent_order = live[np.argsort(al.agent_seq[live], kind="stable")]
    return al._agent_order


class Masks(NamedTuple):
    """The dynamic rules' masks a cycle's kernels read (eligibility.py)."""

    closed: npt.NDArray[np.bool_]  # [agents]: closed to every framework (draining, ...)
    blocked: npt.NDArray[np.bool_]  # [agents, frameworks]: pairs closed (refuse filters, ...)


def select(
    al: AllocatorArrays, order: npt.NDArray[np.intp], closed: npt.NDArray[np.bool_]
) -> tuple[npt.NDArray[np.intp], F64, bool, bool]:
    """The cycle's candidates in walk order: agents in ``order`` someone may be offered, not
    ``closed``, with something allocatable. Returns (candidates, their unreserved free
    resources, whether any has reservations, whether any has PreferNoSchedule taints)."""
    n = al._agents.size
    rows = np.empty(len(order), dtype=np.intp)
    free = np.empty((len(order), 4))
    flags = np.zeros(2, dtype=np.bool_)
    kernel = python(select_kernel) if al.kernel == "numpy" else select_kernel
    got = kernel(
        order, al.count_ok[:n], closed, al.capacity[:n], al.used[:n],
        al.reservations.free_sum[:n], al.placement.has_soft_taints[:n], al._min_array,
        rows, free, flags,
    )  # fmt: skip
    return rows[:got], free[:got], bool(flags[0]), bool(flags[1])


def _select(
    order: Any,
    count_ok: Any,
    closed: Any,
    capacity: Any,
    used: Any,
    free_sum: Any,
    soft: Any,
    min_rows: Any,
    out_rows: Any,
    out_free: Any,
    flags: Any,
) -> int:
    n = 0
    for i in range(order.shape[0]):
        a = order[i]
        if i + SELECT_AHEAD < order.shape[0]:  # random order: ask for the rows ahead (walks)
            b = order[i + SELECT_AHEAD]
            prefetch(count_ok, b, 0)
            prefetch(closed, b, 0)
            prefetch(soft, b, 0)
            prefetch(capacity, b, 0)
            prefetch(used, b, 0)
            prefetch(free_sum, b, 0)
        if count_ok[a] <= 0 or closed[a]:
            continue
        reserved = False
        for k in range(4):
            x = capacity[a, k] - used[a, k]
            x = max(x, 0.0)
            out_free[n, k] = x
            if free_sum[a, k] != 0:
                reserved = True
        # Allocatable: every threshold of some alternative met (options.allocatable).
        offerable = False
        for r in range(min_rows.shape[0]):
            met = True
            for k in range(4):
                if out_free[n, k] + free_sum[a, k] < min_rows[r, k]:
                    met = False
                    break
            if met:
                offerable = True
                break
        if offerable:
            out_rows[n] = a
            flags[0] |= reserved
            flags[1] |= soft[a]
            n += 1
    return n


select_kernel = compiled(_select)


@functools.cache  # once per process
def warm() -> None:
    """Compile (or load from numba's cache) the selection before the first cycle."""
    ok = np.ones(1, dtype=np.bool_)
    one = np.ones((1, 4))
    out = (np.empty(1, dtype=np.intp), np.empty((1, 4)), np.zeros(2, dtype=np.bool_))
    zero = np.zeros(1, dtype=np.intp)
    select_kernel(zero, np.ones(1, dtype=np.int64), ~ok, one, one, one, ok, one, *out)


def _pass(
    al: AllocatorArrays,
    order_: npt.NDArray[np.intp],
    active: npt.NDArray[np.intp],
    m: int,
    cpus: float,
    planned: float,
    masks: Masks,
) -> fastpath.Walked | None:
    """One pass of the cycle (order.py): the agents in ``order_`` walked for the framework
    rows ``active`` (one priority level), ``planned`` cpus already in the plan."""
    if cpus != math.inf and not _any_reserved_or_soft(al) and fastpath.applies(al, active):
        # A paced cycle's budget is a few agents of thousands: select as far as the walk goes.
        selected = _selected(al, order_, masks.closed)
        return walk_within(al, selected, active, m, masks.blocked, cpus, planned)
    candidates, free, reserved, soft = select(al, order_, masks.closed)
    if not len(candidates):
        return None
    if not reserved and not soft and fastpath.applies(al, active):
        # No candidate has reservations, so its free resources are the unreserved ones.
        if cpus == math.inf:
            return fastpath.walk(al, candidates, free, active, m, masks.blocked)
        return walk_within(al, iter([(candidates, free)]), active, m, masks.blocked, cpus, planned)
    al.general_walks += 1
    counted = al.agent_alive[: al._agents.size] & ~masks.closed  # the headroom's agents
    return general_walk.walk(al, candidates, free, active, m, masks.blocked, counted, cpus, planned)


def _any_reserved_or_soft(al: AllocatorArrays) -> bool:
    """Whether any agent row has reservations or PreferNoSchedule taints: then the pass's
    walk is chosen from all its candidates' (``select``), so all are selected first."""
    n = al._agents.size
    return bool(al.reservations.free_sum[:n].any() or al.placement.has_soft_taints[:n].any())


def _selected(
    al: AllocatorArrays, order_: npt.NDArray[np.intp], closed: npt.NDArray[np.bool_]
) -> Iterator[tuple[npt.NDArray[np.intp], F64]]:
    """``select`` over ``order_`` a slice at a time, each twice the last, as the walk asks
    for more. An agent's free resources change only when it is walked, so a slice selected
    after the walk of the slices before it is what one selection of the whole order would
    have found for it. (At 50,000 agents one selection of the whole order, in its random
    order, was ~4 ms of a ~5 ms paced cycle, for a walk of a few agents.)"""
    start, size = 0, SELECT_FIRST
    while start < len(order_):
        candidates, free, _, _ = select(al, order_[start : start + size], closed)
        start += size
        size *= 2
        if len(candidates):
            yield candidates, free


def walk_within(
    al: AllocatorArrays,
    selected: Iterator[tuple[npt.NDArray[np.intp], F64]],
    active: npt.NDArray[np.intp],
    m: int,
    blocked: npt.NDArray[np.bool_],
    cpus: float,
    planned: float = 0.0,
) -> fastpath.Walked | None:
    """The fast walk up to ``cpus`` (see ``run``) over the candidates ``selected`` yields in
    walk order (None: there were none), in runs of agents: each run is the shortest whose
    free cpus, were they all offered, would reach what is left (or the rest of what was
    selected so far). An agent offers at most what it has free, so the plan cannot reach the
    budget before a run's last agent, and a walk carries on where the previous run left it
    (it charges as it goes): the runs make the plan that one walk stopped at the budget would
    make. The cpus are added up one by one in walk order, as the reference does, so the two
    stop at the same agent."""
    parts: list[fastpath.Walked] = []
    any_selected = False
    for candidates, free in selected:
        any_selected = True
        column = free[:, 0]
        # Read into Python as far as the walk goes, in doubling chunks: the whole column as a
        # list was ~2 % of a 10k-agent master.
        free_cpus: list[float] = []
        chunk = 4
        start, n = 0, len(column)
        while start < n and planned < cpus:
            reach, end = planned, start
            while end < n and reach < cpus:
                if end == len(free_cpus):
                    free_cpus += column[end : end + chunk].tolist()
                    chunk *= 2
                reach += free_cpus[end]
                end += 1
            part = fastpath.walk(al, candidates[start:end], free[start:end], active, m, blocked)
            for x in part.offers[:, 0].tolist():
                planned += x
            parts.append(part)
            start = end
        if planned >= cpus:
            break
    if not any_selected:
        return None
    if len(parts) == 1:
        return parts[0]
    if not parts:
        return fastpath.Walked.of([])
    return fastpath.Walked(
        np.concatenate([p.frameworks for p in parts]),
        np.concatenate([p.agents for p in parts]),
        np.concatenate([p.offers for p in parts]).reshape(-1, 4),
    )
