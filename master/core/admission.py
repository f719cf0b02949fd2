"""Admission control's hard bounds (issue #18): the core admits no more work than these, and
says why when it refuses.

Launch pacing (pacing.py) keeps the cluster's launches near a latency target; these bounds hold
whatever pacing does (or with it off), so that no backlog grows with the load:

1. Tasks launching (accepted, not yet RUNNING) on one agent stay at most
   ``max_agent_launches``. An agent at the bound is held: offered to nobody (the allocator's
   draining mask, so explain says "agent draining") until its launches move on, which each
   allocation cycle checks. An accept that would pass the bound is refused.
2. Statuses forwarded to one framework and not yet acknowledged: at
   ``max_framework_pending_statuses`` the framework is offered nothing (CoreState's
   ``sync_allocator``) and its accepts are refused until it acknowledges.

3. Accepts waiting for the core (counted by the shell, which alone sees them queue) stay at
   most ``max_waiting_accepts``: one more is refused as it arrives (``waiting_accept``), and
   while half of the bound wait an allocation cycle offers nothing (``cycle_hold``), so the
   accepts queued behind it are answered before more offers make more of them. The shell
   counts and asks; these decide.

A refusal is ``RESOURCE_EXHAUSTED`` with the bound and the numbers, raised before anything
changes (the core's rule 1): the offers stay the framework's to accept later or decline.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from corral.master.core.agent_holds import AgentHolds as AgentHolds
from corral.master.core.agent_holds import launching as launching
from corral.master.core.records import FrameworkRecord
from corral.master.core.refusals import Overloaded

if TYPE_CHECKING:
    from corral.master.core.state import CoreState

# The bounds' names (Overloaded.bound, the accepts_refused metric's label).
AGENT_LAUNCHES = "agent_launches"
FRAMEWORK_STATUSES = "framework_statuses"
WAITING_ACCEPTS = "waiting_accepts"  # the shell's (master/runtime.py)


def waiting_accept(waiting: int, bound: int) -> Overloaded | None:
    """Rule 3: the refusal of one more accept when ``waiting`` already wait, or None."""
    if waiting < bound:
        return None
    return Overloaded(
        WAITING_ACCEPTS,
        f"{waiting} accepts already wait for the master (the bound is {bound}): it is behind; "
        "decline the offers or try again later",
    )


def cycle_hold(waiting: int, bound: int) -> str:
    """Rule 3: why an allocation cycle offers nothing while ``waiting`` accepts wait ("": it
    offers as usual)."""
    half = bound / 2
    return f"{waiting} accepts wait for the master (holding at {half:g})" if waiting >= half else ""


def statuses_held(fw: FrameworkRecord, bound: int) -> bool:
    """Whether ``fw`` has as many unacknowledged statuses as the bound allows."""
    return len(fw.pending) >= bound


def check_accept(core: CoreState, fw: FrameworkRecord, tasks_on: Iterable[tuple[str, int]]) -> None:
    """Refuse (Overloaded: RESOURCE_EXHAUSTED) an accept of ``tasks_on`` (agent id, number of
    tasks) that would pass a bound; nothing has changed yet."""
    cfg = core.config
    tasks_on = [(agent_id, n) for agent_id, n in tasks_on if n > 0]
    if not tasks_on:
        return  # an accept that launches nothing only gives resources back
    if statuses_held(fw, cfg.max_framework_pending_statuses):
        raise Overloaded(
            FRAMEWORK_STATUSES,
            f"framework {fw.framework_id} has {len(fw.pending)} status updates not acknowledged "
            f"(the bound is {cfg.max_framework_pending_statuses}): acknowledge them before "
            "launching more",
        )
    for agent_id, n in tasks_on:
        now = launching(core.agents[agent_id])
        if now + n > cfg.max_agent_launches:
            raise Overloaded(
                AGENT_LAUNCHES,
                f"agent {agent_id} has {now} tasks launching; {n} more would pass the bound of "
                f"{cfg.max_agent_launches} launches in flight per agent: decline the offer or "
                "try again later",
            )
