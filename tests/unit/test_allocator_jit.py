"""Where numba cannot cache compiled code (no writable location), the allocator's loops are
still compiled, per process, instead of the master failing to import."""

from __future__ import annotations

from typing import Any

import pytest

from corral.master.allocator import jit

pytestmark = pytest.mark.skipif(not jit.AVAILABLE, reason="numba is not installed")


def test_compiles_without_a_cache_when_caching_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = jit.numba.njit
    asked: list[dict[str, Any]] = []

    def njit(*args: Any, **options: Any) -> Any:
        if args:  # numba's own uses while compiling
            return real(*args, **options)
        asked.append(options)
        if options.get("cache"):
            raise RuntimeError("cannot cache function 'add': no locator available for file")
        return real(**options)

    monkeypatch.setattr(jit.numba, "njit", njit)

    def add(a: int, b: int) -> int:
        return a + b

    fast = jit.compiled(add)
    assert fast(2, 3) == 5
    assert fast is not add and hasattr(fast, "py_func")  # a numba dispatcher, not the function
    assert [o.get("cache", False) for o in asked] == [True, False]


def test_prefetch_is_only_a_hint() -> None:
    """A compiled loop that asks for rows ahead computes what the same loop in plain Python
    computes (where the hint does nothing)."""
    import numpy as np

    def rows_sum(rows: Any, order: Any) -> float:
        total = 0.0
        for i in range(order.shape[0]):
            if i + 2 < order.shape[0]:
                jit.prefetch(rows, order[i + 2], 1)
            total += rows[order[i], 0] * (i + 1) + rows[order[i], 1]
        return total

    rng = np.random.default_rng(7)
    rows = rng.random((500, 2))
    order = rng.permutation(500)
    compiled = jit.compiled(rows_sum)
    assert compiled(rows, order) == rows_sum(rows, order)
