"""Corral's allocator: hierarchical weighted DRF behind the ``Allocator`` protocol.

``make_allocator("numpy")`` is what the master uses; ``"reference"`` is the plain-Python
specification the numpy allocator is tested against.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from master.allocator.interface import Allocation, Allocator, Explanation, Scalars
from master.allocator.numpy_allocator import DrfAllocator
from master.allocator.options import AllocatorOptions, make_options
from master.allocator.reference import ReferenceAllocator

KINDS: tuple[str, ...] = ("numpy", "reference")


def make_allocator(
    kind: str = "numpy",
    *,
    min_allocatable: Mapping[str, float] | None = None,
    fairness_exclude: Iterable[str] | None = None,
) -> Allocator:
    """Build an allocator; options: ``min_allocatable`` ({"cpus": 0.01, "mem": 32} by default,
    an offer needs one of them) and ``fairness_exclude`` (("gpus",) by default)."""
    options = make_options(min_allocatable, fairness_exclude)
    if kind == "reference":
        return ReferenceAllocator(options)
    if kind == "numpy":
        return DrfAllocator(options)
    raise ValueError(f"unknown allocator kind {kind!r} (known: {', '.join(KINDS)})")


__all__ = [
    "KINDS",
    "Allocation",
    "Allocator",
    "AllocatorOptions",
    "DrfAllocator",
    "Explanation",
    "ReferenceAllocator",
    "Scalars",
    "make_allocator",
]
