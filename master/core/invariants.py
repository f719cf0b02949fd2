"""What the core's self-checks share (validate.py, and each component's ``validate``): the
error a broken invariant raises and the tolerance sums are compared with."""

from __future__ import annotations

from collections.abc import Iterable

# Charges and tallies are sums of floats added and taken back in different orders.
TOLERANCE = 1e-6


class InvariantBroken(AssertionError):
    pass


def close(a: Iterable[float], b: Iterable[float]) -> bool:
    """Two vectors of sums equal within TOLERANCE."""
    return all(abs(x - y) <= TOLERANCE for x, y in zip(a, b, strict=True))
