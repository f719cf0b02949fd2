"""The DRF order: which framework is offered an agent first. Written once, here; the reference,
the numpy walk, the compiled walks and explain all rank frameworks with these keys.

A framework f is ranked on agent a by this key, smallest first:

  1. priority level (a slot: 0 for every framework until priority classes fill it)
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
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

PRIORITY_LEVEL = 0  # the slot priority classes will fill (key 1)

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]

ReferenceKey = tuple[int, int, int, float, int, str, float, int, str]


def reference_key(
    *,
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
        PRIORITY_LEVEL,
        1 if prefers_not else 0,
        role_tier,
        role_key,
        role_count,
        role_name,
        share,
        count,
        framework_id,
    )


def name_ranks(names: Sequence[str | None]) -> I64:
    """Each name's rank in code-point order (as Python compares str); None sorts last."""
    n = len(names)
    keyed = sorted(range(n), key=lambda i: (names[i] is None, names[i] or ""))
    ranks = np.empty(n, dtype=np.int64)
    ranks[keyed] = np.arange(n, dtype=np.int64)
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
) -> npt.NDArray[np.intp]:
    """``frameworks`` (rows) sorted by the key above. Role arrays are indexed by role row,
    framework arrays by framework row; ``prefers_not`` by position in ``frameworks`` (None:
    the agent has no PreferNoSchedule taint)."""
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
    return frameworks[np.lexsort(keys)]
