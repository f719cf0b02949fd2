"""Revocable offers outstanding and the frameworks filtered from them (revocable.py's rules): the
core's ``revocable`` component."""

from __future__ import annotations

from collections import Counter

from corral.master.core.records import OfferRecord


class RevocableOffers:
    """The outstanding revocable offers (rule 5), the frameworks' refuse filters on agents'
    revocable pools, and how many each framework was made (rule 2's turns)."""

    def __init__(self, master_id: str) -> None:
        self.prefix = f"{master_id}-R"
        self.seq = 0
        self.out: dict[str, OfferRecord] = {}
        self.filters: dict[tuple[str, str], float] = {}  # (framework, agent) -> until
        self.made: Counter[str] = Counter()
        # Agents whose latest report has a revocable estimate (usage.py keeps it): the only
        # ones a tick looks at, so a cluster without oversubscription pays nothing.
        self.lenders: set[str] = set()

    def mine(self, offer_id: str) -> bool:
        return offer_id.startswith(self.prefix)

    def of_agent(self, agent_id: str) -> list[OfferRecord]:
        return [o for o in self.out.values() if o.agent_id == agent_id]

    def of_framework(self, framework_id: str) -> list[OfferRecord]:
        return [o for o in self.out.values() if o.framework_id == framework_id]
