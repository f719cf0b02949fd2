"""Compiling the allocator's loops with numba, and what happens without it.

The loops are written in the subset of Python numba compiles, so without numba they still run,
as plain Python. Compiled code is cached on disk (next to the sources, in ``NUMBA_CACHE_DIR``,
or in the user's cache directory); where none of those is writable the loops are compiled in
each process instead of failing to import.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

try:
    import numba
except ImportError:  # pragma: no cover - numba is a dependency; this keeps the numpy path usable
    numba = None  # type: ignore[assignment]

AVAILABLE = numba is not None

F = TypeVar("F", bound=Callable[..., Any])


def compiled(fn: F) -> F:
    """``fn`` compiled (cached when possible), or ``fn`` itself without numba."""
    if numba is None:  # pragma: no cover
        return fn
    try:
        return cast(F, numba.njit(cache=True, nogil=True)(fn))
    except RuntimeError:  # "cannot cache function ...: no locator available"
        return cast(F, numba.njit(nogil=True)(fn))
