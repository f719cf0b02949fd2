"""The result of a per-unit benchmark of the master (``corral bench offers``, ``launches``)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any


@dataclass
class StepCosts:
    """Median µs of master CPU per unit (an offer, a launched task), step by step."""

    unit: str  # "offer", "task": names the figures in ``as_dict``
    agents: int
    frameworks: int
    rounds: int
    per_round: float  # units per measured round, on average
    us_per_unit: dict[str, float]

    @classmethod
    def of(
        cls,
        unit: str,
        agents: int,
        frameworks: int,
        counts: list[int],
        per_step: dict[str, list[float]],
    ) -> StepCosts:
        """From each measured round's unit count and each step's µs per unit in it."""
        return cls(
            unit=unit,
            agents=agents,
            frameworks=frameworks,
            rounds=len(counts),
            per_round=statistics.mean(counts) if counts else 0.0,
            us_per_unit={s: statistics.median(v) if v else 0.0 for s, v in per_step.items()},
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "agents": self.agents,
            "frameworks": self.frameworks,
            "rounds": self.rounds,
            f"{self.unit}s_per_round": self.per_round,
            f"us_per_{self.unit}": self.us_per_unit,
        }
