"""GPU agents are kept for GPU work (Mesos' --filter_gpu_resources): an agent with GPUs is
offered only to frameworks with the GPU_RESOURCES capability, so CPU-only work does not fill the
machines a GPU job needs. On by default; ``AllocatorOptions.filter_gpu_resources`` turns it off.
"""

from __future__ import annotations

from corral.master.allocator.options import REASON_GPU

REASON = REASON_GPU


def blocking(agent_gpus: float, framework_gpu_capable: bool, enabled: bool) -> list[str]:
    """The reason (empty: not blocked) that keeps the framework off the agent."""
    if enabled and agent_gpus > 0 and not framework_gpu_capable:
        return [REASON]
    return []
