"""A nomination's hold given back (nominations.py, rule 4's end): shared by nominations.py and
gang_holds.py, which both release holds, so neither imports the other for it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from corral.master.core.records import Nomination, NominationKey

if TYPE_CHECKING:
    from corral.master.core.state import CoreState


def key(n: Nomination) -> NominationKey:
    return (n.framework_id, n.demand, n.agent_id)


def release(core: CoreState, n: Nomination) -> None:
    """Give a hold back to the pool and forget the nomination (victims still dying end as
    PREEMPTED, but free their resources to everyone)."""
    core.nominations.pop(key(n), None)
    for v in n.victims:
        core.victim_of.pop(v, None)
    agent = core.agents.get(n.agent_id)
    if any(x > 0 for x in n.held) and agent is not None and agent.in_allocator:
        core.allocator.recover(
            n.framework_id, n.agent_id, (n.held[0], n.held[1], n.held[2], n.held[3])
        )
        core.freed(agent)
    n.held = [0.0, 0.0, 0.0, 0.0]
