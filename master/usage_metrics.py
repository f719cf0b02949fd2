"""The usage gauges of ``MasterMetrics``, set from the core's agents at each scrape."""

from __future__ import annotations

from collections import Counter

from corral.master.core import revocable
from corral.master.core.master import MasterCore
from corral.master.metrics import MasterMetrics


def refresh(m: MasterMetrics, core: MasterCore) -> None:
    memory: list[tuple[str, float, float]] = []  # agents gone since the last scrape: no series
    levels: Counter[str] = Counter()
    estimate = [0.0, 0.0]
    held = [0.0, 0.0]
    for agent in core.agents.values():
        u = agent.usage
        if u is None:
            continue
        memory.append((agent.agent_id, u.mem_used, u.mem_available))
        levels[u.pressure] += 1
        estimate[0] += u.revocable_cpus
        estimate[1] += u.revocable_mem
        cpus, mem = revocable.held(agent)
        held[0] += cpus
        held[1] += mem
    m.agent_memory.snapshot = memory
    for level in ("soft", "hard"):
        m.agents_under_pressure.labels(level).set(levels[level])
    offered = [0.0, 0.0]
    for o in core.revocable.out.values():
        offered[0] += o.scalars[0]
        offered[1] += o.scalars[1]
    for k, resource in enumerate(("cpus", "mem")):
        m.revocable.labels(resource, "estimated").set(estimate[k])
        m.revocable.labels(resource, "held").set(held[k])
        m.revocable.labels(resource, "offered").set(offered[k])
