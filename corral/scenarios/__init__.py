"""Replayable failure scenarios (``corral scenario NAME``): each starts a master and simulated
agents, runs frameworks without and with the fix, and prints a timeline and its figures.
docs/scenarios.md explains each."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # not at run time: `corral --help` lists NAMES without the SDK loaded
    from corral.scenarios.base import Scenario

# One module per scenario, each defining SCENARIO; imported when asked for (they import the SDK).
_MODULES = {
    "batch-wave": "corral.scenarios.batch_wave",
    "partial-gang": "corral.scenarios.partial_gang",
    "spread-pending": "corral.scenarios.spread_pending",
    "spread-autoscaler": "corral.scenarios.spread_autoscaler",
    "autoscaler-oscillation": "corral.scenarios.autoscaler_oscillation",
    "besteffort-thrash": "corral.scenarios.besteffort_thrash",
    "preempt-vs-evict": "corral.scenarios.preempt_vs_evict",
    "queue-wave": "corral.scenarios.queue_wave",
}
NAMES = tuple(_MODULES)


def load(name: str) -> Scenario:
    scenario: Scenario = importlib.import_module(_MODULES[name]).SCENARIO
    return scenario
