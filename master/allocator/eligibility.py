"""The eligibility rule, written once: framework f may be offered agent a when

- every static placement rule allows it (rules.STATIC: taints, constraints, GPUs, memory
  pressure, any registered), kept as ``placement.ok[a, f]`` (masks/placement.py), and
- no dynamic rule closes it (rules.masks(): draining closes agents, suppression frameworks,
  refuse filters pairs, and any rule registered there).

The dynamic rules are combined here, by scope, from each rule's array form at ``now``
(``closed_agents``, ``closed_frameworks``, ``blocked_pairs``): the cycle hands the combined
masks to the walk kernels and the candidate selection, rooms and ``held_back`` ask them too, and
explain counts each rule's own. With only the built-in rules a combined mask is the rule's own
array (draining's, the filters' swept ``active``): nothing is copied in a cycle. The reference
spells the same rule out per pair (``ReferenceAllocator._blockers``), held equal by the property
tests. Consumers call ``sweep`` first, so the refuse filters' boolean view is current at
``now``.

``row``, ``column`` and ``matrix`` are ``count_ok``'s rule (per agent, the frameworks someone may
be offered it): placement, refuse filters and suppression, kept in step incrementally. For any
other dynamic rule ``count_ok`` is an upper bound, which is all the cycle asks of it (it skips
agents whose count is zero; the walks ask the combined masks).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from corral.master.allocator import rules
from corral.master.allocator.rules import MaskRule

if TYPE_CHECKING:
    from corral.master.allocator.arrays import AllocatorArrays

Mask = npt.NDArray[np.bool_]


def sweep(al: AllocatorArrays, now: float) -> None:
    """Drop the refuse filters expired at ``now`` (and recount ``count_ok``), as a cycle does
    first: the filters' boolean view is then current for every question asked at ``now``."""
    if al.filters.expire(now):
        al._recount()


def _combined(masks: list[Mask], size: int) -> Mask:
    if not masks:
        return np.zeros(size, dtype=np.bool_)
    if len(masks) == 1:
        return masks[0]
    out = masks[0].copy()
    for mask in masks[1:]:
        out |= mask
    return out


def closed_agents(al: AllocatorArrays, now: float, rooms: bool = False) -> Mask:
    """[live agent rows]: agents an agent-scope rule closes to every framework (``rooms``:
    those rules rooms ask)."""
    n = al._agents.size
    masks = [r.array_form(al, now)[:n] for r in rules.masks(rooms) if r.scope == "agent"]
    return _combined(masks, n)


def closed_frameworks(al: AllocatorArrays, now: float, rooms: bool = False) -> Mask:
    """[framework rows]: frameworks a framework-scope rule closes (suppression among them,
    unless ``rooms``)."""
    m = al._frameworks.size
    masks = [r.array_form(al, now)[:m] for r in rules.masks(rooms) if r.scope == "framework"]
    return _combined(masks, m)


def blocked_pairs(al: AllocatorArrays, now: float, rooms: bool = False) -> Mask:
    """[agent rows, framework rows] (at least the live ones): pairs a pair-scope rule closes.
    The refuse filters' swept view itself while they are the only such rule."""
    masks = [r.array_form(al, now) for r in rules.masks(rooms) if r.scope == "pair"]
    if len(masks) == 1:
        return masks[0]
    n, m = al._agents.size, al._frameworks.size
    out = np.zeros((n, m), dtype=np.bool_)
    for mask in masks:
        out |= mask[:n, :m]
    return out


def open_frameworks(al: AllocatorArrays, now: float) -> npt.NDArray[np.intp]:
    """The framework rows a cycle may serve: alive and closed by no rule."""
    m = al._frameworks.size
    return np.flatnonzero(al.fw_alive[:m] & ~closed_frameworks(al, now))


def rule_rows(
    al: AllocatorArrays, rule: MaskRule, framework: int, rows: npt.NDArray[np.intp], now: float
) -> Mask:
    """Of agent ``rows``, those ``rule`` closes to framework row ``framework`` (explain and
    ``held_back`` count a rule at a time)."""
    mask = rule.array_form(al, now)
    if rule.scope == "agent":
        return np.asarray(mask[rows])
    if rule.scope == "framework":
        return np.full(len(rows), bool(mask[framework]), dtype=np.bool_)
    return np.asarray(mask[rows, framework])


def at(al: AllocatorArrays, rows: npt.NDArray[np.intp], framework: int, now: float) -> Mask:
    """Which of agent ``rows`` framework row ``framework`` may be offered at ``now``: the
    rule as ``Allocator.room`` asks it (the rules rooms ask, after ``sweep``)."""
    out = np.asarray(al.placement.ok[rows, framework]).copy()
    for rule in rules.masks(rooms=True):
        out &= ~rule_rows(al, rule, framework, rows, now)
    return out


def row(al: AllocatorArrays, agent: int, m: int) -> Mask:
    """``count_ok``'s rule for agent row ``agent``: which of the first ``m`` framework rows."""
    return np.asarray(al.placement.ok[agent, :m] & ~al.filters.active[agent, :m] & al.fw_active[:m])


def column(al: AllocatorArrays, framework: int, n: int) -> Mask:
    """``count_ok``'s rule for framework row ``framework`` over the first ``n`` agent rows, were
    it active (its own activity is the caller's to check)."""
    return np.asarray(al.placement.ok[:n, framework] & ~al.filters.active[:n, framework])


def matrix(al: AllocatorArrays, n: int, m: int) -> Mask:
    """``count_ok``'s rule for the first ``n`` agents and ``m`` frameworks."""
    return np.asarray(al.placement.ok[:n, :m] & ~al.filters.active[:n, :m] & al.fw_active[:m])
