"""Offers that run out: an expired offer counts as a decline (issue #41).

Mesos' ``--offer_timeout`` exists so that a framework cannot hoard the cluster by holding
offers it never answers. Rescinding alone does not do that: what comes back is offered again
at once, and a hoarder that wins the next cycle holds it for another timeout. So:

Rules:
1. An offer outstanding past ``offer_timeout`` is rescinded and returned as a decline is: the
   framework gets a refuse filter on that agent for what the offer held (ticks.py rule 4).
2. The filter lasts twice the offer timeout the first time, and doubles each time the
   framework's offers expire again without it answering any offer in between, up to
   ``MAX_DOUBLINGS`` doublings (and ``max_refuse_seconds``): whoever else wants the agent has
   it at least two thirds of the time while the hoarder waits, and almost all of it soon.
3. Answering an offer (an accept or a decline) ends the framework's streak: its next expiry
   starts again at twice the timeout. Filters already installed stay.
4. A framework's filters from expiries outlast a REVIVE (which clears the filters its own
   declines installed): a hoarder cannot wave its penalty away. Each is kept here until it
   ends, and installed again after the revive.
5. A removed framework's streak and holds are forgotten; holds are dropped once they end.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from corral.master.core.states import FrameworkState
from corral.resources import SCALARS

if TYPE_CHECKING:
    from corral.master.allocator.interface import Allocator
    from corral.master.core.config import MasterConfig
    from corral.master.core.records import FrameworkRecord

MAX_DOUBLINGS = 6  # 2T, 4T, ... 128T: with the default 60 s timeout about two hours at most


class OfferExpiries:
    """The core's ``expiries`` component: each framework's streak and its expiries' filters,
    installed in the allocator it is given."""

    def __init__(self, config: MasterConfig, allocator: Allocator) -> None:
        self._config = config
        self._allocator = allocator
        # Consecutive expiries of a framework's offers with no answer in between (rule 2).
        self.streak: dict[str, int] = {}
        # Per framework, per agent: until when an expiry's filter holds it, what it refused.
        self.holds: dict[str, dict[str, tuple[float, tuple[float, ...]]]] = {}

    def filter_seconds(self, framework_id: str) -> float:
        """Rule 2: how long the filter of this expiry lasts (the streak grows by one)."""
        n = self.streak.get(framework_id, 0)
        self.streak[framework_id] = n + 1
        seconds = 2.0 * self._config.offer_timeout * 2.0 ** min(n, MAX_DOUBLINGS)
        return min(seconds, self._config.max_refuse_seconds)

    def expired(
        self,
        framework_id: str,
        refused: Iterable[tuple[str, tuple[float, ...]]],
        now: float,
    ) -> float:
        """Rule 1: the framework's offers of these agents expired: filter it on each for what
        its offers held there. Returns the filter's length."""
        seconds = self.filter_seconds(framework_id)
        until = now + seconds
        holds = self.holds.setdefault(framework_id, {})
        for agent_id, amount in refused:
            self._allocator.add_filter(framework_id, agent_id, until, amount)
            holds[agent_id] = (until, amount)
        return seconds

    def answered(self, framework_id: str) -> None:
        """Rule 3."""
        if self.streak:
            self.streak.pop(framework_id, None)

    def revived(self, framework_id: str, now: float) -> None:
        """Rule 4: after the framework's filters were cleared, its expiries' go back."""
        for agent_id, (until, amount) in self.holds.get(framework_id, {}).items():
            if until > now:
                self._allocator.add_filter(framework_id, agent_id, until, amount)

    def forget(self, framework_id: str) -> None:
        """Rule 5: the framework was removed."""
        self.streak.pop(framework_id, None)
        self.holds.pop(framework_id, None)

    def sweep(self, now: float) -> None:
        """Rule 5: holds that ended are dropped (each tick; few frameworks hoard)."""
        for framework_id in [f for f, h in self.holds.items() if _sweep_one(h, now)]:
            del self.holds[framework_id]

    def validate(self, frameworks: Mapping[str, FrameworkRecord]) -> list[str]:
        """Streaks and holds are of frameworks the core keeps, not removed ones (rule 5), each
        hold of an agent with an amount of every scalar, and a streak positive; as faults."""
        faults: list[str] = []

        def gone(fw_id: str) -> bool:
            fw = frameworks.get(fw_id)
            return fw is None or fw.state is FrameworkState.REMOVED

        for fw_id, n in self.streak.items():
            if n <= 0:
                faults.append(f"framework {fw_id}'s expiry streak is {n}")
            if gone(fw_id):
                faults.append(f"expiry streak of gone framework {fw_id}")
        for fw_id, holds in self.holds.items():
            if gone(fw_id) or not holds:
                faults.append(f"expiry holds of gone framework {fw_id} (or an empty entry)")
            for agent_id, (_, amount) in holds.items():
                if len(amount) != len(SCALARS):
                    faults.append(f"expiry hold of {fw_id} on {agent_id}: {amount}")
        return faults


def _sweep_one(holds: dict[str, tuple[float, tuple[float, ...]]], now: float) -> bool:
    """Drop the framework's ended holds; True when none is left."""
    for agent_id in [a for a, (until, _) in holds.items() if until <= now]:
        del holds[agent_id]
    return not holds
