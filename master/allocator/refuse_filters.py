"""Refuse filters as the numpy allocator's operations: installed by a decline (one agent or a
batch), cleared by a revive, lifted when resources come back to an agent; each keeps
``count_ok`` (per agent row, the active frameworks eligible there) in step with the filters.

The filters themselves (what a pair refused, until when, when they lift) are
``masks/filters.py``'s ``FilterMatrix``; this module is the bookkeeping around it:

- a filter for a framework or agent that is gone is ignored; a NaN expiry is an error;
- a newly active filter of an active framework placement allows on the agent takes one from
  that agent's ``count_ok``; clearing or lifting one gives it back.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from corral.master.allocator.masks import filters as filter_mask
from corral.master.allocator.options import check_scalars

if TYPE_CHECKING:
    from corral.master.allocator.arrays import AllocatorArrays


def add(
    al: AllocatorArrays,
    framework_id: str,
    agent_id: str,
    expires_at: float,
    refused: Sequence[float] | None = None,
) -> None:
    """``Allocator.add_filter``."""
    f = al._frameworks.rows.get(framework_id)
    a = al._agents.rows.get(agent_id)
    if f is None or a is None:
        return
    if math.isnan(expires_at):
        raise ValueError("filter expiry is NaN")
    amount = None if refused is None else check_scalars("refused", refused)
    if (
        al.filters.add(a, f, float(expires_at), amount)
        and al.fw_active[f]
        and al.placement.ok[a, f]
    ):
        al.count_ok[a] -= 1


def add_many(
    al: AllocatorArrays,
    framework_id: str,
    agent_ids: Sequence[str],
    expires_at: float,
    refused: Sequence[Sequence[float]] | None = None,
) -> None:
    """``add`` for many agents at once (a framework declining a batch of offers);
    ``refused[i]`` is what was refused of ``agent_ids[i]`` (None: everything)."""
    if refused is not None:
        for agent_id, amount in zip(agent_ids, refused, strict=True):
            add(al, framework_id, agent_id, expires_at, amount)
        return
    f = al._frameworks.rows.get(framework_id)
    if f is None:
        return
    if math.isnan(expires_at):
        raise ValueError("filter expiry is NaN")
    rows = np.fromiter(
        (r for r in map(al._agents.rows.get, agent_ids) if r is not None), dtype=np.intp
    )
    if not len(rows):
        return
    t = float(expires_at)
    filters = al.filters
    filters.snap[rows, f] = filter_mask.EVERYTHING_SLOT
    later = rows[filters.until[rows, f] < t]
    newly = later[~filters.active[later, f]]
    filters.until[later, f] = t
    filters.active[later, f] = True
    if len(later):
        filters.next_expiry = min(filters.next_expiry, t)
    if al.fw_active[f]:
        np.subtract.at(al.count_ok, newly[al.placement.ok[newly, f]], 1)


def clear(al: AllocatorArrays, f: int) -> None:
    """Framework row f's filters all go (a revive): it counts as eligible where they held."""
    n = al._agents.size
    was = al.filters.clear_framework(f)[:n]
    if al.fw_active[f]:
        al.count_ok[:n] += (was & al.placement.ok[:n, f]).astype(np.int64)


def lift(al: AllocatorArrays, agents: npt.NDArray[np.intp]) -> None:
    """Resources came back to ``agents``: filters that refused less than an agent now has
    free lift (masks/filters.py), and the frameworks they held count as eligible again."""
    growing = al.filters.grown_past_floor(agents, al.capacity, al.used, al.reservations.free_sum)
    if not len(growing):
        return
    free = al._unreserved_free(growing) + al.reservations.free_sum[growing]
    m = al._frameworks.size
    for i, a in enumerate(growing.tolist()):
        gone = al.filters.lift(a, free[i], m)
        if len(gone):
            back = al.placement.ok[a, gone] & al.fw_active[gone]
            al.count_ok[a] += int(back.sum())
