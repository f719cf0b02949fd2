"""What a role may still be given under its quota, and so what an agent offers a framework:
the numpy allocator's form of reference.py's OFFER SIZE, shared by explain and ``room``.

The rules kept (Mesos' quota, per role r, per resource):

- consumption[r] = allocation + the role's unallocated reservations;
- unmet[r] = max(0, guarantee - consumption); required = the sum of unmet over roles;
- allowance[r] = unmet[r] + max(0, available - required), available being the unreserved free
  of the agents no dynamic rule closes (not draining: the headroom kept for other roles' unmet
  guarantees); unbounded while no guarantee is pending;
- offer = the role's free reservation on the agent + min(unreserved free, limit - consumption,
  allowance): rules/quota.py's ``offer``.

``general_walk_kernel.py`` does the same arithmetic in its walk, operation for operation.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from corral.master.allocator.rules import quota as quota_rule

if TYPE_CHECKING:
    from corral.master.allocator.arrays import AllocatorArrays

Vec = list[float]
INF = math.inf


def required(al: AllocatorArrays) -> Vec:
    """The headroom required: every role's unmet guarantee, summed in role order."""
    out = [0.0] * 4
    for r in range(len(al.role_names)):
        missing = unmet(al, r)
        out = [q + u for q, u in zip(out, missing, strict=True)]
    return out


def consumption(al: AllocatorArrays, r: int) -> Vec:
    """Allocation plus unallocated reservations: role row r's quota consumption."""
    alloc: Vec = al.role_alloc[r].tolist()
    if not al.reservations.by_agent:
        return alloc
    return [x + y for x, y in zip(alloc, al.reservations.unallocated(r), strict=True)]


def unmet(al: AllocatorArrays, r: int) -> Vec:
    """What role row r's guarantee still asks for."""
    consumed = consumption(al, r)
    return [max(0.0, g - x) for g, x in zip(al.guarantee[r], consumed, strict=True)]


def allowance(al: AllocatorArrays, r: int, now: float) -> Vec:
    """What role row r may take of unreserved resources without eating the headroom kept for
    the other roles' unmet guarantees, at ``now``."""
    # No guarantee and no reservation: every role's unmet guarantee is max(0, 0 - x) of
    # its allocation x, nothing while no allocation has gone below zero (float noise
    # could), so nothing is required (asked once per gang room: skip the loop).
    if (
        not al._guaranteed
        and not al.reservations.by_agent
        and (not len(al.role_alloc) or float(al.role_alloc.min()) >= 0.0)
    ):
        return [INF] * 4
    needed = required(al)
    if all(q <= 0 for q in needed):
        return [INF] * 4
    rows = np.flatnonzero(al.offerable_agents(now))
    available = [0.0] * 4
    for free in al._unreserved_free(rows).tolist():
        available = [x + y for x, y in zip(available, free, strict=True)]
    return [u + max(0.0, x - q) for u, x, q in zip(unmet(al, r), available, needed, strict=True)]


def offer(al: AllocatorArrays, f: int, a: int, allowed: Vec) -> Vec:
    """What agent row a offers framework row f now; ``allowed``: its role's ``allowance``."""
    r = int(al.fw_role[f])
    consumed = consumption(al, r)
    remaining = [max(0.0, lim - x) for lim, x in zip(al.limit[r], consumed, strict=True)]
    from_res = al.reservations.free(a, r)
    cap, used = al.capacity[a].tolist(), al.used[a].tolist()
    unres = [max(0.0, c - u) for c, u in zip(cap, used, strict=True)]
    return quota_rule.offer(unres, from_res, remaining, allowed)
