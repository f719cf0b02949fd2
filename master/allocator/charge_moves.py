"""Charging a framework for what an agent gives it, and giving it back: every array the
numpy allocator keeps in step when resources move (the charge book, framework and role
allocations, allocation counts, the agent's unreserved used, its reservations), then the refuse
filters and fit-cache entries that depend on the agent's free resources.

The rules kept (reference.py's ``allocate`` and ``recover``):

- a charge takes from the role's reservation on the agent first, the rest from its unreserved
  resources;
- what a pair is charged caps what comes back of it, returns applied in the order given; the
  reservation takes its share back first;
- a batch is checked whole before anything changes (a bad entry changes nothing), and entries
  whose framework or agent is gone are skipped.

Batch operations are array operations or compiled loops (``charge_table.py``); the one Python loop
per pair is for agents with reservations.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from corral.master.allocator import refuse_filters
from corral.master.allocator.charge_table import give_back
from corral.master.allocator.interface import PAIR_FW_BITS, PAIR_FW_MASK, PlanSource, Scalars
from corral.master.allocator.options import check_scalar_rows

if TYPE_CHECKING:
    from corral.master.allocator.arrays import AllocatorArrays

Vec = list[float]
F64 = npt.NDArray[np.float64]


def charge(al: AllocatorArrays, f: int, a: int, amounts: Vec) -> None:
    """Charge framework row f ``amounts`` of agent row a (checked by the caller)."""
    r = int(al.fw_role[f])
    from_res = al.reservations.take(a, r, amounts)
    al.charges.charge_one(
        f, a, r, amounts, from_res,
        (al.alloc, al.role_alloc, al.used, al.fw_count, al.role_count),
    )  # fmt: skip
    al._fit_cache.charged(a, al._free_for)


def recover_many(al: AllocatorArrays, returns: Sequence[tuple[str, str, Sequence[float]]]) -> None:
    """``Allocator.recover_many``: (framework id, agent id, scalars) given back, in order."""
    # Validate the whole batch first (with array operations: batches are thousands of
    # declined offers): a bad entry changes nothing.
    if not returns:
        return
    framework_ids, agent_ids, scalars = zip(*returns, strict=True)
    amounts = check_scalar_rows("recover", scalars)
    fs = list(map(al._frameworks.rows.get, framework_ids))
    agents = list(map(al._agents.rows.get, agent_ids))
    if None in fs or None in agents:  # some already gone with their framework or agent
        keep = [i for i, (f, a) in enumerate(zip(fs, agents, strict=True)) if None not in (f, a)]
        fs, agents, amounts = [fs[i] for i in keep], [agents[i] for i in keep], amounts[keep]
    recover_rows(al, np.array(fs, dtype=np.intp), np.array(agents, dtype=np.intp), amounts)


def recover_handles(
    al: AllocatorArrays,
    source: PlanSource,
    handles: npt.ArrayLike,
    scalars: npt.ArrayLike,
) -> None:
    """``Allocator.recover_handles``: a plan's entries given back by their pair keys."""
    keys = np.asarray(handles, dtype=np.int64)
    n = len(keys)
    if not n:
        return
    if source.framework_table is not al._frameworks.ids or (
        source.agent_table is not al._agents.ids
    ):
        # A framework or agent came or went since the plan (a row may name another now):
        # by ids, which skips the gone.
        recover_many(al, source.entries(handles, scalars))
        return
    # The plan's own amounts, charged by this allocator: nothing to check.
    amounts = np.asarray(scalars, dtype=np.float64).reshape(n, 4)
    recover_rows(
        al,
        (keys & PAIR_FW_MASK).astype(np.intp),
        (keys >> PAIR_FW_BITS).astype(np.intp),
        amounts,
    )


def recover_rows(
    al: AllocatorArrays,
    frameworks: npt.NDArray[np.intp],
    agents: npt.NDArray[np.intp],
    amounts: F64,
) -> None:
    """Give back charges in order: what each pair is charged caps what comes back."""
    if not len(frameworks):
        return
    back = al.charges.take(frameworks, agents, amounts)
    book = al.reservations
    if not book.by_agent or not any(a in book.by_agent for a in agents.tolist()):
        give_back(frameworks, agents, back, al.alloc, al.fw_role, al.role_alloc, al.used)
        refuse_filters.lift(al, agents)
        al._fit_cache.returned(agents, al._free_for)
        return
    # Some agent has reservations: the reservation book takes its share first, in order.
    for f, a, taken in zip(frameworks.tolist(), agents.tolist(), back.tolist(), strict=True):
        if math.isnan(taken[0]):
            continue
        al.alloc[f] -= taken
        r = int(al.fw_role[f])
        al.role_alloc[r] -= taken
        to_res = book.give_back(a, r, taken)
        rest = [b - t for b, t in zip(taken, to_res, strict=True)]
        used = al.used[a].tolist()
        al.used[a] = [u - min(b, u) for u, b in zip(used, rest, strict=True)]
    refuse_filters.lift(al, agents)
    al._fit_cache.returned(agents, al._free_for)


def charged(al: AllocatorArrays, framework_id: str, agent_id: str) -> Scalars:
    """``Allocator.charged``: what the pair is charged now (zeros if either is unknown)."""
    f, a = al._frameworks.rows.get(framework_id), al._agents.rows.get(agent_id)
    got = None if f is None or a is None else al.charges.get(f, a)
    if got is None:
        return (0.0, 0.0, 0.0, 0.0)
    return (got[0], got[1], got[2], got[3])
