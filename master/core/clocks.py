"""The membership clocks the tick keeps (ticks.py rules 1 to 3): heartbeat deadlines, the
rate limit on marking agents UNREACHABLE, the RECOVERING deadline, whether intervals need
re-telling. Owned by ``Clocks`` (the core's ``clocks``); the functions below are pure over the
configuration and an agent's record."""

from __future__ import annotations

import math
from dataclasses import dataclass

from corral.master.core.config import MasterConfig
from corral.master.core.records import AgentRecord


@dataclass(slots=True)
class Clocks:
    """What the tick remembers between ticks (the core's ``clocks``)."""

    # Agents connected or gone since the last tick: heartbeat intervals may need re-telling
    # (a scan of every agent per tick otherwise, 2 % of a 10k-agent master).
    intervals_dirty: bool = False
    # Every ACTIVE connected agent's heartbeat interval lies within [told_low, told_high]: set
    # exactly by the re-telling pass, widened by each registration, left as they are when
    # agents go (the bounds stay true). A tick whose band holds both re-tells nobody without
    # walking the agents (the walk was 3 % of a master registering 50,000 agents).
    told_low: float = math.inf
    told_high: float = 0.0
    # No ACTIVE agent's heartbeat deadline is earlier than this: the tick walks the agents
    # only once it has passed (a walk of 10k agents twice a second was 3 % of the master).
    earliest_deadline: float = math.inf
    # Rule 2: when agents still RECOVERING become UNREACHABLE (set by the core's Recover).
    recovery_deadline: float = math.inf
    # Marking agents UNREACHABLE is rate-limited (config.agent_removal_rate): a token bucket
    # of one, refilled at the rate.
    removal_tokens: float = 1.0
    removal_refilled_at: float = 0.0

    def retell_intervals(self) -> None:
        """Agents connected or went: the next tick re-tells the heartbeat intervals now off."""
        self.intervals_dirty = True

    def told(self, interval: float) -> None:
        """An agent was told ``interval`` outside the re-telling pass (its registration)."""
        self.told_low = min(self.told_low, interval)
        self.told_high = max(self.told_high, interval)

    def watch_deadline(self, cfg: MasterConfig, agent: AgentRecord) -> None:
        """``agent``'s deadline moved (a registration, a new interval): the tick walks the
        agents once the earliest has passed."""
        self.earliest_deadline = min(self.earliest_deadline, deadline(cfg, agent))

    def may_mark_unreachable(self, cfg: MasterConfig, now: float) -> bool:
        """The rate limit on marking agents UNREACHABLE (config.agent_removal_rate)."""
        rate = cfg.agent_removal_rate
        if rate == math.inf:
            return True
        elapsed = max(0.0, now - self.removal_refilled_at)
        self.removal_tokens = min(1.0, self.removal_tokens + elapsed * rate)
        self.removal_refilled_at = now
        if self.removal_tokens < 1.0:
            return False
        self.removal_tokens -= 1.0
        return True


def heartbeat_interval_for(cfg: MasterConfig, agents: int) -> float:
    """ticks.py rule 3: at most ``max_agent_heartbeats_per_second`` from all agents."""
    return max(cfg.agent_heartbeat_interval, agents / cfg.max_agent_heartbeats_per_second)


def agent_timeout(cfg: MasterConfig, agent: AgentRecord) -> float:
    """As many missed heartbeats as the configured timeout allows at the base interval."""
    return agent.heartbeat_interval * (cfg.agent_timeout / cfg.agent_heartbeat_interval)


def deadline(cfg: MasterConfig, agent: AgentRecord) -> float:
    """When an ACTIVE agent not heard from becomes UNREACHABLE."""
    return max(agent.last_seen, agent.interval_set_at) + agent_timeout(cfg, agent)
