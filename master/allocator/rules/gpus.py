"""GPU agents are kept for GPU work (Mesos' --filter_gpu_resources): an agent with GPUs is
offered only to frameworks with the GPU_RESOURCES capability, so CPU-only work does not fill the
machines a GPU job needs. On by default; ``RuleOptions.filter_gpu_resources`` turns it off."""

from __future__ import annotations

from collections.abc import Hashable

from corral.master.allocator.rules.facts import AgentFacts, FrameworkFacts, RuleOptions

REASON = "agent has GPUs and the framework lacks the GPU_RESOURCES capability"


class Gpus:
    name = "gpus"
    spread_domains = False  # a capability, not where the demand's tasks may go by design

    def agent_key(self, agent: AgentFacts) -> Hashable:
        return agent.gpus > 0

    def framework_key(self, framework: FrameworkFacts) -> Hashable:
        return framework.gpu_capable

    def blocking(
        self, agent: AgentFacts, framework: FrameworkFacts, options: RuleOptions
    ) -> list[str]:
        if options.filter_gpu_resources and agent.gpus > 0 and not framework.gpu_capable:
            return [REASON]
        return []

    def prefers_not(self, agent: AgentFacts, framework: FrameworkFacts) -> bool:
        return False


RULE = Gpus()
