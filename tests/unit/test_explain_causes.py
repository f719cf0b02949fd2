"""Explain names why a framework is offered nothing, and a removed framework shows no priority
or unmet demand (issue #32, defect 9: "held back by: suppressed: 4" of a framework that had
not suppressed; a removed framework still showed a priority and unmet demand)."""

from __future__ import annotations

from corral.master import views
from corral.master.allocator.options import REASON_SUPPRESSED
from corral.master.core import events as ev
from corral.master.core import explain_causes as causes
from tests.unit.core_harness import Harness, demand


def _cluster() -> tuple[Harness, str]:
    h = Harness()
    for _ in range(4):
        h.add_agent(resources="cpus:2;mem:1024;disk:100")
    fw, _ = h.subscribe("trainer")
    return h, fw


def _reasons(h: Harness, fw: str) -> dict[str, int]:
    h.now += 1
    h.allocate()
    explained = h.core.explain(fw, h.now)
    assert explained["suppressed"] is h.core.frameworks[fw].suppressed
    reasons: dict[str, int] = explained["reasons"]
    return reasons


def test_a_framework_waiting_for_a_gang_is_not_said_to_be_suppressed() -> None:
    h, fw = _cluster()
    # 8 members of 2 cpus on four 2-cpu agents: the gang cannot be cut.
    h.set_demands(fw, demand("train", "cpus:2;mem:128", count=8, min_member=8))
    reasons = _reasons(h, fw)
    assert REASON_SUPPRESSED not in reasons, reasons
    assert reasons[causes.GANG_ONLY] == 4


def test_a_framework_whose_demands_are_met_wants_nothing() -> None:
    h, fw = _cluster()
    h.set_demands(fw)
    reasons = _reasons(h, fw)
    assert REASON_SUPPRESSED not in reasons
    assert reasons[causes.WANTS_NOTHING] == 4


def test_a_framework_that_suppressed_is_said_to_have() -> None:
    h, fw = _cluster()
    h.handle(ev.Suppress(**h.call_base(fw)))
    reasons = _reasons(h, fw)
    assert REASON_SUPPRESSED not in reasons
    assert reasons[causes.SUPPRESSED_BY_FRAMEWORK] == 4


def test_a_removed_framework_shows_no_priority_or_unmet_demand() -> None:
    h, fw = _cluster()
    h.set_demands(fw, demand("web", "cpus:1;mem:128", count=3, priority_class="serving"))
    h.handle(ev.Teardown(**h.call_base(fw)))
    (record,) = views.state_json(h.core)["frameworks"]
    assert record["state"] == "removed"
    assert record["priority"] is None and record["demands"] == [], record
    (entry,) = views.state_pb(h.core).frameworks
    assert entry.priority == 0 and not entry.demands
