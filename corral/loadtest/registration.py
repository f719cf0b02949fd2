"""The registration phase's figures: how long the agents took to register, and which side spent
the CPU meanwhile, so a slow start names its limit (the master, or the load generator).

The simulated agents start as the master acknowledges them (agent/registration_ramp.py), so the
phase runs at the rate the slower side allows: the side that burned the CPU is the limit. On a
machine whose cores are all busy either may be, and the rest of the machine's work (other
processes) is stated beside them.
"""

from __future__ import annotations

from dataclasses import dataclass

from corral.loadtest.collect import MachineTimes

# The master's core loop is one thread: this busy, it is the limit whatever else runs.
MASTER_BOUND_PERCENT = 85.0


@dataclass(frozen=True)
class CpuMark:
    """Cumulative CPU seconds at wall-clock ``t``: the master's (None when this process did not
    start it), the agent processes' together, and the machine's counters."""

    t: float
    master: float | None
    agents: float
    machine: MachineTimes | None


def registration_figures(
    start: CpuMark, end: CpuMark, agents: int, unreachable: int
) -> dict[str, object]:
    """The figures of ``agents`` registering between ``start`` and ``end``."""
    span = max(end.t - start.t, 1e-9)

    def percent(a: float | None, b: float | None) -> float | None:
        return None if a is None or b is None else round(100.0 * (b - a) / span, 1)

    master = percent(start.master, end.master)
    generator = percent(start.agents, end.agents)
    busy: float | None = None
    if start.machine is not None and end.machine is not None:
        total = end.machine.total - start.machine.total
        idle = end.machine.idle - start.machine.idle
        steal = end.machine.steal - start.machine.steal
        if total > 0:
            busy = round(100.0 * (total - idle - steal) / total, 1)
    return {
        "seconds": round(span, 2),
        "agents": agents,
        "agents_per_s": round(agents / span, 1),
        "master_cpu_percent": master,
        "agents_cpu_percent": generator,
        "machine_cpu_busy_percent": busy,
        "unreachable": unreachable,
        "limit": limit(master, generator),
    }


def limit(master: float | None, generator: float | None) -> str:
    """Which side bounded the phase: the master once its loop is nearly a whole core, else the
    side that spent more CPU ("unknown" without the master's figure)."""
    if master is None or generator is None:
        return "unknown"
    if master >= MASTER_BOUND_PERCENT or master >= generator:
        return "master"
    return "load generator"
