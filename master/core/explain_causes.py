"""Why the allocator sees a framework as suppressed, said as the cause (issue #32, defect 9:
`corral explain` said "held back by: suppressed: 4" of a framework that never suppressed).

The core hands the allocator one flag per framework (CoreState.sync_allocator): offered
nothing when it asked (SUPPRESS), is not subscribed, wants nothing by its demands, waits only
for a gang's bundle, or has too many statuses unacknowledged. The allocator's explain knows
only the flag; explain replaces it with the causes that hold, in that order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from corral.limits import echo
from corral.master.allocator.options import REASON_SUPPRESSED
from corral.master.core import admission, demands
from corral.master.core.records import FrameworkRecord
from corral.master.core.refusals import CallRejected, Refusal
from corral.master.core.states import FrameworkState

if TYPE_CHECKING:
    from corral.master.core.state import CoreState

SUPPRESSED_BY_FRAMEWORK = "suppressed by the framework (SUPPRESS; REVIVE ends it)"
NOT_SUBSCRIBED = "framework not subscribed (disconnected)"
WANTS_NOTHING = "wants nothing: its demands are met"
GANG_ONLY = "its only unmet demands are gangs, offered only as a bundle (see its demands)"


def causes(core: CoreState, fw: FrameworkRecord) -> list[str]:
    """Why ``fw`` is offered nothing by the regular cycle; empty when it may be offered."""
    out: list[str] = []
    if fw.suppressed:
        out.append(SUPPRESSED_BY_FRAMEWORK)
    if fw.state is not FrameworkState.SUBSCRIBED:
        out.append(NOT_SUBSCRIBED)
    if demands.wants_nothing(fw):
        out.append(WANTS_NOTHING)
    elif not demands.offered_regularly(fw):
        out.append(GANG_ONLY)
    bound = core.config.max_framework_pending_statuses
    if admission.statuses_held(fw, bound):
        out.append(
            f"{len(fw.pending)} status updates not acknowledged (the bound is {bound}): "
            "acknowledge them"
        )
    return out


def explained(core: CoreState, fw: FrameworkRecord, reasons: dict[str, int]) -> dict[str, int]:
    """The allocator's reasons with its bare "suppressed" replaced by the causes."""
    count = reasons.pop(REASON_SUPPRESSED, None)
    if count is None:
        return reasons
    for cause in causes(core, fw) or [REASON_SUPPRESSED]:
        reasons[cause] = count
    return reasons


def explain(core: CoreState, framework_id: str, now: float) -> dict[str, Any]:
    """The Operator Explain answer: the allocator's reasons for the last cycle, with their
    causes named, the framework's priority and its pending demands."""
    fw = core.frameworks.get(framework_id)
    if fw is None:
        raise CallRejected(Refusal.NOT_FOUND, f"unknown framework {echo(framework_id)}")
    if fw.state is FrameworkState.REMOVED:
        # Out of the allocator: nothing is offered to it, and that is the whole answer.
        return {
            "framework_id": framework_id,
            "state": fw.state.value,
            "suppressed": fw.suppressed,
            "outstanding_offers": 0,
            "offered_agents": 0,
            "reasons": {"framework removed": 1},
            "details": {},
            "priority": 0,
            "wants_nothing": True,
            "pending_demands": [],
        }
    explanation = core.allocator.explain(framework_id, now)
    return {
        "framework_id": framework_id,
        "state": fw.state.value,
        "suppressed": fw.suppressed,
        "outstanding_offers": core.book.count_of(fw.framework_id),
        "offered_agents": explanation.offered_agents,
        "reasons": explained(core, fw, dict(explanation.reasons)),
        "details": dict(explanation.details),
        "priority": demands.priority(fw, core.priority),
        "wants_nothing": demands.wants_nothing(fw),
        "pending_demands": demands.explain(core, fw, now),
    }
