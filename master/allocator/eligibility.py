"""The eligibility rule, written once: framework f may be offered agent a when

- the placement masks allow it (hard taints, attribute constraints, GPUs, memory pressure:
  ``masks/placement.py``, which combines ``masks/taints.py``, ``constraints.py``, ``gpus.py``,
  ``pressure.py``; pressure changes at run time, by signature, like the rest),
- no refuse filter holds it (``masks/filters.py``),
- f is active: alive and not suppressed (``masks/suppression.py``),
- a is not draining (``masks/draining.py``; draining agents are dropped before any walk).

The numpy allocator asks here for a row (one agent, every framework), a column, the whole matrix, or
some agents at a given time (``at``: gang rooms); the compiled walks read the same three arrays
(``placement.ok``, ``filters.active``, ``fw_active``) in their scans, and the reference spells the
rule out per pair (``ReferenceAllocator._blockers``), held equal by the property tests. A new mask
is a module under masks/ with its reason string, combined into ``placement.ok`` if it is static or
added here if it changes at run time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from corral.master.allocator.numpy_allocator import DrfAllocator

Mask = npt.NDArray[np.bool_]


def row(al: DrfAllocator, agent: int, m: int) -> Mask:
    """Which of the first ``m`` framework rows may be offered agent row ``agent``."""
    return np.asarray(al.placement.ok[agent, :m] & ~al.filters.active[agent, :m] & al.fw_active[:m])


def column(al: DrfAllocator, framework: int, n: int) -> Mask:
    """Which of the first ``n`` agent rows framework row ``framework`` may be offered, were it
    active (its own activity is the caller's to check)."""
    return np.asarray(al.placement.ok[:n, framework] & ~al.filters.active[:n, framework])


def matrix(al: DrfAllocator, n: int, m: int) -> Mask:
    """The whole rule for the first ``n`` agents and ``m`` frameworks."""
    return np.asarray(al.placement.ok[:n, :m] & ~al.filters.active[:n, :m] & al.fw_active[:m])


def at(al: DrfAllocator, rows: npt.NDArray[np.intp], framework: int, now: float) -> Mask:
    """Which of agent ``rows`` framework row ``framework`` may be offered at time ``now``: the
    rule as ``Allocator.room`` asks it (filters by their expiry, not the swept ``active``
    view; draining agents out; the framework's own activity not asked)."""
    return np.asarray(
        al.placement.ok[rows, framework]
        & (al.filters.until[rows, framework] <= now)
        & ~al.draining[rows]
    )
