"""A sparse log-bucketed latency histogram that travels as JSON and merges by addition.

Buckets are 1/16 of an octave wide (about 4.4 %), from one microsecond up, so a percentile read
back is within a few percent of the sample's value whatever the range, and a worker reporting
thousands of samples a second sends a few dozen numbers.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

_STEPS_PER_OCTAVE = 16
_FLOOR = 1e-6  # seconds; anything faster lands in bucket 0


def bucket_of(seconds: float) -> int:
    if seconds <= _FLOOR:
        return 0
    return int(math.log2(seconds / _FLOOR) * _STEPS_PER_OCTAVE)


def value_of(bucket: int) -> float:
    """The bucket's geometric middle, in seconds."""
    return float(_FLOOR * 2 ** ((bucket + 0.5) / _STEPS_PER_OCTAVE))


class Histogram:
    def __init__(self, counts: Mapping[int, int] | None = None) -> None:
        self.counts: dict[int, int] = dict(counts or {})

    def add(self, seconds: float) -> None:
        b = bucket_of(seconds)
        self.counts[b] = self.counts.get(b, 0) + 1

    def merge(self, other: Mapping[int, int] | Histogram) -> None:
        counts = other.counts if isinstance(other, Histogram) else other
        for b, n in counts.items():
            self.counts[int(b)] = self.counts.get(int(b), 0) + n

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def quantile(self, q: float) -> float | None:
        """The q-quantile in seconds (None without samples)."""
        total = self.total
        if total == 0:
            return None
        rank = q * total
        seen = 0
        for b in sorted(self.counts):
            seen += self.counts[b]
            if seen >= rank:
                return value_of(b)
        return value_of(max(self.counts))

    def to_json(self) -> dict[str, int]:
        return {str(b): n for b, n in self.counts.items()}

    @classmethod
    def from_json(cls, data: Mapping[str, int]) -> Histogram:
        return cls({int(b): int(n) for b, n in data.items()})

    @classmethod
    def merged(cls, parts: Iterable[Mapping[int, int] | Histogram]) -> Histogram:
        h = cls()
        for p in parts:
            h.merge(p)
        return h
