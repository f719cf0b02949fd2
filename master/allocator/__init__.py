"""Corral's allocator: hierarchical weighted DRF behind the ``Allocator`` protocol.

``make_allocator("numba")`` is what the master uses: the numpy allocator whose common-case walk
is compiled with numba. ``"numpy"`` is the same allocator with that walk in Python (no compiler),
and ``"reference"`` the plain-Python specification both are tested against.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from corral.master.allocator.interface import (
    Allocation,
    Allocator,
    Explanation,
    Plan,
    Room,
    Scalars,
)
from corral.master.allocator.numpy_allocator import DrfAllocator
from corral.master.allocator.options import AllocatorOptions, make_options
from corral.master.allocator.reference import ReferenceAllocator

KINDS: tuple[str, ...] = ("numba", "numpy", "reference")


def make_allocator(
    kind: str = "numba",
    *,
    min_allocatable: Mapping[str, float] | Sequence[Mapping[str, float]] | str | None = None,
    fairness_exclude: Iterable[str] | None = None,
    filter_gpu_resources: bool = True,
    options: AllocatorOptions | None = None,
) -> Allocator:
    """Build an allocator: ``options``, or options made of ``min_allocatable`` (Mesos'
    "cpus:0.01|mem:32" by default: alternatives, see ``make_options``) and ``fairness_exclude``
    (("gpus",) by default)."""
    if options is None:
        options = make_options(min_allocatable, fairness_exclude, filter_gpu_resources)
    if kind == "reference":
        return ReferenceAllocator(options)
    if kind in ("numba", "numpy"):
        return DrfAllocator(options, kernel="numba" if kind == "numba" else "numpy")
    raise ValueError(f"unknown allocator kind {kind!r} (known: {', '.join(KINDS)})")


__all__ = [
    "KINDS",
    "Allocation",
    "Allocator",
    "AllocatorOptions",
    "DrfAllocator",
    "Explanation",
    "Plan",
    "ReferenceAllocator",
    "Room",
    "Scalars",
    "make_allocator",
]
