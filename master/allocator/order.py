"""The DRF order: which framework is offered an agent first. Written once, here; the reference,
the two walk kernels and explain all rank frameworks with these keys.

A framework f is ranked on agent a by this key, smallest first:

  1. priority level: minus f's priority (``set_priority``; the master sets it to the highest
     priority class value among f's unmet demands), so the higher priority goes first
  2. 1 if f does not tolerate a PreferNoSchedule taint of a, else 0
  3. quota tier of f's role: 0 while the role's allocation is below its guarantee in some
     resource, else 1
  4. the role's dominant share divided by its weight
  5. allocations the role has received (Mesos' DRF sorter: equal shares take turns)
  6. the role's name
  7. f's dominant share
  8. allocations f has received
  9. f's id

"Allocations received" counts every charge (an offer made, or a task's resources found at
re-registration) and never goes down, as Mesos' sorter counts them: of two frameworks at the
same share, the one offered less often goes first, so two frameworks that decline everything
are served in turn instead of the older one always first. Keys 5-9 make the order total.

Key 1 is applied as passes, not per agent: a cycle walks every agent for the highest priority
level present among the active frameworks, then walks them again for the next level with what
is left, and so on; within a pass keys 2-9 order the frameworks of that level. Why passes: a
higher level gets first pick of every agent in the cycle, and each pass is the walk that
already existed (the fast path and the compiled general walk keep their sorted orders of keys
2-9 unchanged); with one level, the common case, a cycle is one pass as before. The only
difference from sorting by key 1 per agent: a lower level's charges in a pass do not move the
role shares (keys 3-5) that order a higher level on later agents, since that pass came first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]

ReferenceKey = tuple[int, int, int, float, int, str, float, int, str]


def reference_key(
    *,
    priority: int,
    prefers_not: bool,
    role_tier: int,
    role_key: float,
    role_count: int,
    role_name: str,
    share: float,
    count: int,
    framework_id: str,
) -> ReferenceKey:
    """The key of one framework, as the reference sorts by it."""
    return (
        -priority,
        1 if prefers_not else 0,
        role_tier,
        role_key,
        role_count,
        role_name,
        share,
        count,
        framework_id,
    )


PRIORITY_BOUND = 2**62  # priorities are int64 in the numpy allocator; -p must not overflow


def check_priority(framework_id: str, priority: int) -> int:
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise ValueError(f"priority of {framework_id!r} must be an int, got {priority!r}")
    if not -PRIORITY_BOUND < priority < PRIORITY_BOUND:
        raise ValueError(f"priority of {framework_id!r} is out of range: {priority}")
    return priority


def levels(priorities: I64, rows: npt.NDArray[np.intp]) -> list[npt.NDArray[np.intp]]:
    """``rows`` grouped into passes by priority (``priorities`` indexed by row), highest
    first; one level (the common case) is ``[rows]`` itself, found with two reductions."""
    if not len(rows):
        return []
    mine = priorities[rows]
    top, bottom = int(mine.max()), int(mine.min())
    if top == bottom:
        return [rows]
    return [rows[mine == p] for p in sorted(set(mine.tolist()), reverse=True)]


def name_order(names: Sequence[str | None]) -> list[int]:
    """The positions of ``names`` in code-point order (as Python compares str); None last.
    Without a None, sorted by the names themselves: a key tuple per name took three times as
    long (the rooms' id order at 10,000 agents, ~5 ms)."""
    n = len(names)
    if None not in names:
        present = cast("Sequence[str]", names)
        return sorted(range(n), key=present.__getitem__)
    return sorted(range(n), key=lambda i: (names[i] is None, names[i] or ""))


def name_ranks(names: Sequence[str | None]) -> I64:
    """Each name's rank in code-point order (as Python compares str); None sorts last."""
    n = len(names)
    ranks = np.empty(n, dtype=np.int64)
    ranks[name_order(names)] = np.arange(n, dtype=np.int64)
    return ranks


def rank(
    frameworks: npt.NDArray[np.intp],
    *,
    prefers_not: npt.NDArray[np.bool_] | None,
    role_of: npt.NDArray[np.intp],
    role_tier: I64,
    role_key: F64,
    role_count: I64,
    role_rank: I64,
    share: F64,
    count: I64,
    framework_rank: I64,
    priority: I64 | None = None,
) -> npt.NDArray[np.intp]:
    """``frameworks`` (rows) sorted by the key above. Role arrays are indexed by role row,
    framework arrays by framework row; ``prefers_not`` by position in ``frameworks`` (None:
    the agent has no PreferNoSchedule taint); ``priority`` by framework row (None: one level,
    the walks' case: a pass ranks frameworks of one level)."""
    roles = role_of[frameworks]
    keys: list[npt.NDArray[np.generic]] = [
        framework_rank[frameworks],
        count[frameworks],
        share[frameworks],
        role_rank[roles],
        role_count[roles],
        role_key[roles],
        role_tier[roles],
    ]
    if prefers_not is not None:
        keys.append(prefers_not.astype(np.int64))
    if priority is not None:
        keys.append(-priority[frameworks])
    return frameworks[np.lexsort(keys)]
