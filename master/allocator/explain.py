"""``explain()`` of the numpy allocator: the reference's reasons, counted with array operations."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from corral.master.allocator import drf, eligibility, quota, rules
from corral.master.allocator.interface import Explanation
from corral.master.allocator.options import (
    REASON_HEADROOM,
    REASON_NO_FREE,
    REASON_ORDER,
    allocatable,
    quota_reason,
)
from corral.resources import SCALARS

if TYPE_CHECKING:
    from corral.master.allocator.arrays import AllocatorArrays


def explain(alloc: AllocatorArrays, f: int, framework_id: str, now: float) -> Explanation:
    live = np.flatnonzero(alloc.agent_alive[: alloc._agents.size])
    reasons: dict[str, int] = {}

    def count(reason: str, n: int) -> None:
        if n:
            reasons[reason] = reasons.get(reason, 0) + n

    # Each dynamic rule's own mask (eligibility.py), after the filters' sweep at now.
    eligibility.sweep(alloc, now)
    closed = np.zeros(len(live), dtype=np.bool_)
    for rule in rules.masks():
        held = eligibility.rule_rows(alloc, rule, f, live, now)
        count(rule.reasons[0], int(held.sum()))
        closed |= held
    fsig = int(alloc.placement.framework_sig[f])
    sigs, per_sig = np.unique(alloc.placement.agent_sig[live], return_counts=True)
    for asig, n in zip(sigs.tolist(), per_sig.tolist(), strict=True):
        for reason in alloc.placement.pair(asig, fsig)[2]:
            count(reason, n)
    ok = alloc.placement.ok[live, f] & ~closed
    eligible = live[ok].tolist()

    r = int(alloc.fw_role[f])
    role_alloc = alloc.role_alloc[r].tolist()
    consumed = quota.consumption(alloc, r)
    if eligible:
        for k, name in enumerate(SCALARS):
            if consumed[k] >= alloc.limit[r][k]:
                count(quota_reason(name), len(eligible))
    allowance = quota.allowance(alloc, r, now)
    if allowance[0] <= 0 and allowance[1] <= 0:
        count(REASON_HEADROOM, len(eligible))
    count(
        REASON_NO_FREE,
        sum(
            1 for a in eligible if not allocatable(quota.offer(alloc, f, a, allowance), alloc._min)
        ),
    )

    frameworks = np.flatnonzero(alloc.fw_alive[: alloc._frameworks.size])
    cols = drf.fair_columns(alloc.cluster, alloc._fair)
    fkey = np.zeros(alloc.alloc.shape[0])
    fkey[frameworks] = drf.dominant_shares(alloc.alloc[frameworks], alloc.cluster, cols)
    ranked = alloc.rank(frameworks, fkey, alloc.role_keys())
    position = int(np.flatnonzero(ranked == f)[0])
    count(REASON_ORDER, position)

    total = alloc.cluster.tolist()
    details: dict[str, Any] = {
        "role": alloc.role_names[r],
        "weight": alloc.weight[r],
        "dominant_share": drf.dominant_share([alloc.alloc[f].tolist()], 0, total, cols),
        "role_share": drf.dominant_share([role_alloc], 0, total, cols),
        "drf_position": position,
        "eligible_agents": len(eligible),
        "priority": int(alloc.fw_priority[f]),
    }
    return Explanation(framework_id, alloc.last_offered(f), reasons, details)
