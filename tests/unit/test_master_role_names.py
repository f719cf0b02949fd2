"""A role name Mesos would refuse is refused wherever the master core meets one (issue #30,
item 10): a framework's role, an agent's reservations, an operator's weight and quota."""

from __future__ import annotations

import pytest

from corral.master.core import events as ev
from corral.master.core.refusals import CallRejected, Refusal
from corral.master.core.types import AgentSpec
from corral.resources import parse_resources
from tests.unit.core_harness import Harness

BAD = ["..", ".", "a/../b", "/a", "a//b", "-a", "*/a", "a b", "a\x01b"]


@pytest.mark.parametrize("role", BAD)
def test_a_framework_with_a_bad_role_is_refused_and_not_admitted(role: str) -> None:
    h = Harness()
    with pytest.raises(CallRejected) as info:
        h.subscribe("fw", role=role)
    assert info.value.code is Refusal.INVALID_ARGUMENT
    assert "framework info: role" in info.value.message
    assert h.core.frameworks == {}


@pytest.mark.parametrize("role", BAD)
def test_an_agent_reserving_for_a_bad_role_is_refused_and_not_admitted(role: str) -> None:
    h = Harness()
    spec = AgentSpec(
        agent_id="",
        hostname="h",
        resources=parse_resources("cpus:4;mem:1024"),
        reservations={role: parse_resources("cpus:1")},
    )
    with pytest.raises(CallRejected) as info:
        h.handle(ev.AgentRegister(**h.base(), connection=1, spec=spec, new_agent_id="A1"))
    assert info.value.code is Refusal.INVALID_ARGUMENT
    assert "a reservation's role" in info.value.message
    assert h.core.agents == {}


@pytest.mark.parametrize("role", BAD)
def test_an_operator_setting_a_bad_roles_weight_or_quota_is_refused(role: str) -> None:
    h = Harness()
    for event in (
        ev.SetWeight(**h.base(), role=role, weight=2.0),
        ev.SetQuota(**h.base(), role=role, guarantee=(1.0, 0.0, 0.0, 0.0), limit=(2.0,) * 4),
    ):
        with pytest.raises(CallRejected) as info:
            h.handle(event)
        assert info.value.code is Refusal.INVALID_ARGUMENT
    assert h.core.role_views() == []


def test_hierarchical_and_default_roles_are_admitted() -> None:
    h = Harness()
    fid, _ = h.subscribe("fw", role="eng/web")
    assert h.core.frameworks[fid].spec.role == "eng/web"
    fid, _ = h.subscribe("other")
    assert h.core.frameworks[fid].spec.role == "*"
