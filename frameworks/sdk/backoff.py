"""Reconnection delays: exponential with jitter, so a restarted master is not hit by every
framework at the same instant."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Backoff:
    initial: float = 0.1
    maximum: float = 10.0
    multiplier: float = 2.0

    def __post_init__(self) -> None:
        if not 0 < self.initial <= self.maximum or self.multiplier < 1:
            raise ValueError(f"invalid backoff {self}")

    def delays(self, rng: random.Random) -> Iterator[float]:
        """Endless delays; each is drawn from [d/2, d] for a ceiling d that grows to maximum."""
        ceiling = self.initial
        while True:
            yield rng.uniform(ceiling / 2, ceiling)
            ceiling = min(self.maximum, ceiling * self.multiplier)
