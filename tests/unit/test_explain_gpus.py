"""A pending demand of a framework without the GPU_RESOURCES capability: the agents with GPUs
are kept for GPU work (masks/gpus.py), and explain says so instead of calling them room that
fits (found trying the batch framework on a cluster of GPU agents: "3 of 3 agents: fits" while
the framework was offered nothing)."""

from __future__ import annotations

from corral.master.allocator.options import REASON_GPU
from corral.master.core import demands
from tests.unit.core_harness import Harness, demand


def _reasons(h: Harness, fw: str) -> dict[str, list[str]]:
    (pending,) = demands.explain(h.core, h.core.frameworks[fw], h.now)
    return {r["reason"]: r["sample_agents"] for r in pending["reasons"]}


def test_agents_kept_for_gpu_work_are_a_reason_not_room() -> None:
    h = Harness()
    gpu_agent, _ = h.add_agent(resources="cpus:8;mem:4096;gpus:2")
    small, _ = h.add_agent(resources="cpus:1;mem:4096")
    cpu_only, _ = h.subscribe("batch")
    h.set_demands(cpu_only, demand("tasks", "cpus:2;mem:64", count=4))
    h.core.validate()
    assert _reasons(h, cpu_only) == {REASON_GPU: [gpu_agent], "insufficient cpus": [small]}
    # The scan's array form says the same.
    record = h.core.frameworks[cpu_only]
    masks = demands.held_back_masks(h.core, record, h.now)
    agents = demands.connected_agents(h.core)
    assert demands.demand_reasons(
        h.core, record, h.core.frameworks[cpu_only].demands["tasks"], agents, masks
    ) == demands.demand_reasons_reference(
        h.core, record, record.demands["tasks"], agents, demands.held_back(h.core, record, h.now)
    )


def test_a_gpu_capable_framework_has_the_gpu_agent_as_room() -> None:
    h = Harness()
    gpu_agent, _ = h.add_agent(resources="cpus:8;mem:4096;gpus:2")
    trainer, _ = h.subscribe("trainer", gpu_resources=True)
    # More than the agent holds, so the demand stays pending and is explained.
    h.set_demands(trainer, demand("workers", "cpus:2;mem:64;gpus:1", count=3))
    assert _reasons(h, trainer) == {}
    (pending,) = demands.explain(h.core, h.core.frameworks[trainer], h.now)
    assert pending["room"] == {"agents": 1, "sample_agents": [gpu_agent]}
