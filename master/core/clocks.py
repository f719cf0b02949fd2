"""The membership clocks the tick keeps (ticks.py rules 1 to 3): heartbeat deadlines, the
rate limit on marking agents UNREACHABLE, the RECOVERING deadline, whether intervals need
re-telling. Owned by ``Clocks`` (the core's ``clocks``); the functions below are pure over the
configuration and an agent's record."""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from corral.master.core.config import MasterConfig
from corral.master.core.records import AgentRecord
from corral.master.core.states import AgentState

if TYPE_CHECKING:
    from corral.master.core.agent_table import AgentTable


@dataclass(slots=True)
class Clocks:
    """What the tick remembers between ticks (the core's ``clocks``)."""

    # Agents connected or gone since the last tick: heartbeat intervals may need re-telling
    # (a scan of every agent per tick otherwise, 2 % of a 10k-agent master).
    intervals_dirty: bool = False
    # Every interval told, as (interval, agent id) in a min-heap and (-interval, agent id) in
    # a max-heap: the tick re-tells the agents off the band from the heaps' tops instead of
    # walking every agent (a walk per tick while agents register was 3-4.5 % of a master
    # registering 50,000). An entry is stale once its agent is gone, not ACTIVE, not
    # connected, or told another interval; stale ones are dropped when they reach a top, and
    # the heaps are rebuilt when mostly stale (``told``).
    told_low: list[tuple[float, str]] = field(default_factory=list)
    told_high: list[tuple[float, str]] = field(default_factory=list)
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

    def told(self, agent: AgentRecord, agents: Mapping[str, AgentRecord]) -> None:
        """``agent`` was told its ``heartbeat_interval`` (a registration, a re-tell)."""
        interval, agent_id = agent.heartbeat_interval, agent.agent_id
        heapq.heappush(self.told_low, (interval, agent_id))
        heapq.heappush(self.told_high, (-interval, agent_id))
        if len(self.told_low) > 2 * len(agents) + 64:  # mostly stale: keep the live ones
            live = [(a.heartbeat_interval, a.agent_id) for a in agents.values() if is_told(a)]
            self.told_low = sorted(live)
            self.told_high = sorted((-i, aid) for i, aid in live)

    def off_band(
        self, low: float, high: float, agents: Mapping[str, AgentRecord]
    ) -> list[AgentRecord]:
        """The agents whose interval told is below ``low`` or above ``high``, each once, taken
        off the heaps (the caller tells them another, ``told`` again); stale entries dropped."""
        out: dict[str, AgentRecord] = {}
        for heap, sign, beyond in ((self.told_low, 1.0, low), (self.told_high, -1.0, -high)):
            while heap and heap[0][0] < beyond:
                value, agent_id = heapq.heappop(heap)
                agent = agents.get(agent_id)
                if agent is None or not is_told(agent) or agent.heartbeat_interval != sign * value:
                    continue  # stale: gone, not ACTIVE and connected, or told another since
                out[agent_id] = agent
        return list(out.values())

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


# ticks.py rule 3: an interval told because the cluster grew (a re-tell, or a new agent's
# registration) is this much longer than its size calls for, so that further growth is
# absorbed before the next re-tell.
GROWTH_HEADROOM = 1.25


def heartbeat_interval_for(cfg: MasterConfig, table: AgentTable, headroom: float = 1.0) -> float:
    """ticks.py rule 3: at most ``max_agent_heartbeats_per_second`` from the agents the
    interval spreads (``AgentTable.heartbeating``), those ``headroom`` times as many. The one
    count a registration and the tick's re-tell both use: when they counted differently, a
    leader taking over re-told its returning agents."""
    return max(
        cfg.agent_heartbeat_interval,
        table.heartbeating * headroom / cfg.max_agent_heartbeats_per_second,
    )


def agent_timeout(cfg: MasterConfig, agent: AgentRecord) -> float:
    """As many missed heartbeats as the configured timeout allows at the base interval."""
    return agent.heartbeat_interval * (cfg.agent_timeout / cfg.agent_heartbeat_interval)


def deadline(cfg: MasterConfig, agent: AgentRecord) -> float:
    """When an ACTIVE agent not heard from becomes UNREACHABLE."""
    return max(agent.last_seen, agent.interval_set_at) + agent_timeout(cfg, agent)


def is_told(agent: AgentRecord) -> bool:
    """Whether ``agent``'s interval is one the tick keeps right (ticks.py rule 3): it is ACTIVE
    and connected."""
    return agent.state is AgentState.ACTIVE and agent.connection is not None
