"""master/core/authz.py through the core: identity, grants and caps decided with the ACL as
data and the principal from the event; a refusal is Denied and changes nothing (the harness
validates the core after every event)."""

from __future__ import annotations

import pytest

from corral import acl as acls
from corral.acl import Principal, acl_from_data
from corral.master.core import events as ev
from corral.master.core.refusals import Denied
from corral.master.core.types import FrameworkSpec, TaskState
from corral.placement import Taint, TaintEffect, Toleration
from corral.resources import parse_resources
from tests.unit.core_harness import Harness, demand, status, task

RULES = {
    "version": "t",
    "rules": [
        {
            "name": "team",
            "principals": ["team"],
            "frameworks": {
                "roles": ["web"],
                "priority_classes": ["serving"],
                "tolerations": ["gpu=yes:NoSchedule"],
                "max_resources": {"gpus": 1},
            },
        },
        {"name": "other", "principals": ["other"], "frameworks": {"roles": ["*"]}},
        {
            "name": "nodes",
            "principals": ["node-*"],
            "agents": {"attributes": {"gpu": ["yes"]}, "max_resources": "gpus:4"},
        },
    ],
}
TEAM, OTHER = Principal("team"), Principal("other")
NODE, NODE2 = Principal("node-1"), Principal("node-2")
GPU_TAINT = (Taint("gpu", "yes", TaintEffect.NO_SCHEDULE),)
TOLERATE = Toleration("gpu", "yes", effect=TaintEffect.NO_SCHEDULE)


@pytest.fixture
def h() -> Harness:
    return Harness(acl=acl_from_data(RULES, "test"))


def denial_of(h: Harness, fn: object, *args: object, **kw: object) -> Denied:
    with pytest.raises(Denied) as exc:
        fn(*args, **kw)  # type: ignore[operator]
    return exc.value


def test_a_framework_is_its_certificates_principal_and_keeps_its_id(h: Harness) -> None:
    fid, _ = h.subscribe("web", role="web", peer=TEAM)
    assert h.core.frameworks[fid].spec.principal == "team"
    # Another principal with the framework's id (and name): refused, the framework untouched.
    d = denial_of(h, h.subscribe, "web", framework_id=fid, role="web", peer=OTHER)
    assert "subscribed with principal 'team', not 'other'" in d.message
    assert h.core.frameworks[fid].principal == TEAM


def test_the_principal_field_must_be_the_certificates() -> None:
    h = Harness(acl=acl_from_data(RULES, "test"))
    with pytest.raises(Denied, match="is not its certificate's 'other'"):
        h.handle(
            ev.FrameworkSubscribe(
                **h.base(),
                connection=1,
                spec=FrameworkSpec(framework_id="", name="x", role="web", principal="team"),
                new_framework_id="F1",
                stream_id="s",
                principal=OTHER,
            )
        )


def test_roles_tolerations_and_classes_are_granted_or_denied(h: Harness) -> None:
    assert denial_of(h, h.subscribe, "x", role="batch", peer=TEAM).denial.action == (
        acls.REGISTER_FRAMEWORK
    )
    d = denial_of(h, h.subscribe, "x", role="web", peer=OTHER, tolerations=(TOLERATE,))
    assert d.denial.action == acls.TOLERATE and d.principal == "other"
    fid, _ = h.subscribe("web", role="web", peer=TEAM, tolerations=(TOLERATE,))
    other, _ = h.subscribe("o", role="batch", peer=OTHER)
    h.set_demands(fid, demand("d", priority_class="serving"))
    d = denial_of(h, h.set_demands, other, demand("d", priority_class="system"))
    assert d.denial.action == acls.USE_PRIORITY_CLASS and "no rule grants it" in d.message
    denial_of(h, h.set_demands, other, demand("d", tolerations=(TOLERATE,)))
    h.set_demands(other, demand("d"))  # the global default needs no grant


def test_a_principals_tasks_hold_at_most_its_cap_over_all_its_frameworks(h: Harness) -> None:
    aid, _ = h.add_agent(resources="cpus:8;mem:4096;disk:100;gpus:4", peer=NODE)
    a, _ = h.subscribe("a", role="web", peer=TEAM, gpu_resources=True)
    b, _ = h.subscribe("b", role="web", peer=TEAM, gpu_resources=True)
    offer = h.offers_for(a)[0]
    h.accept(a, [offer.offer_id], task("t1", "cpus:1;mem:64;gpus:1"))
    assert h.core.principal_held.of("team") == (1.0, 64.0, 0.0, 1.0)
    offer = h.offers_for(b)[0]
    d = denial_of(h, h.accept, b, [offer.offer_id], task("t2", "cpus:1;mem:64;gpus:1"))
    assert d.denial.rule == "team" and "gpus 2 would exceed the cap of 1" in d.message
    # The first task ends: its GPU is the principal's again.
    h.agent_updates(aid, status("t1", a, aid, TaskState.FINISHED))
    assert h.core.principal_held.of("team") == (0.0, 0.0, 0.0, 0.0)
    h.accept(b, [offer.offer_id], task("t2", "cpus:1;mem:64;gpus:1"))


def test_agents_claim_what_they_are_granted_and_keep_their_id(h: Harness) -> None:
    d = denial_of(h, h.add_agent, peer=TEAM)
    assert d.denial.action == acls.REGISTER_AGENT
    d = denial_of(h, h.add_agent, attributes={"gpu": "no"}, peer=NODE)
    assert d.denial.action == acls.CLAIM_ATTRIBUTE
    d = denial_of(h, h.add_agent, resources="cpus:1;mem:1;gpus:100", peer=NODE)
    assert d.denial.action == acls.CLAIM_RESOURCES and d.denial.rule == "nodes"
    d = denial_of(
        h,
        h.add_agent,
        reservations={"web": parse_resources("cpus:1")},
        peer=NODE,
    )
    assert d.denial.action == acls.RESERVE
    aid, _ = h.add_agent(attributes={"gpu": "yes"}, taints=GPU_TAINT, peer=NODE)
    assert h.core.agents[aid].spec.principal == "node-1"
    secret = h.core.agents[aid].secret
    with pytest.raises(Denied, match="belongs to principal 'node-1'"):
        h.handle(
            ev.AgentRegister(
                **h.base(),
                connection=99,
                spec=h.core.agents[aid].spec,
                new_agent_id="X",
                secret=secret,  # even with its secret
                principal=NODE2,
            )
        )


def test_a_new_acl_applies_to_the_next_call(h: Harness) -> None:
    other, _ = h.subscribe("o", role="batch", peer=OTHER)
    denial_of(h, h.set_demands, other, demand("d", priority_class="system"))
    more = {**RULES, "version": "u"}
    more["rules"] = [
        *RULES["rules"],
        {"name": "sys", "principals": ["other"], "frameworks": {"priority_classes": ["system"]}},
    ]
    out = h.handle(ev.SetAcls(**h.base(), acl=acl_from_data(more, "test")))
    assert [c.kind for c in out] == ["acls_loaded"]  # type: ignore[attr-defined]
    h.set_demands(other, demand("d", priority_class="system"))


# --- rule 6: a service launching for its owner; rule 7: reviews -------------------------------

SERVICE_RULES = {
    "version": "s",
    "rules": [
        *RULES["rules"],
        {
            # The service may do much more than its tenants: that must not leak to them.
            "name": "serving",
            "principals": ["serving"],
            "frameworks": {"roles": ["*"], "priority_classes": ["*"], "tolerations": ["*"]},
            "launch_for": ["team"],
        },
        {"name": "web-team", "principals": ["team", "mate"], "act_for": ["team", "mate"]},
    ],
}
SERVING = Principal("serving")


@pytest.fixture
def svc() -> Harness:
    return Harness(acl=acl_from_data(SERVICE_RULES, "test"))


def test_a_service_launching_for_an_owner_is_authorized_as_the_owner(svc: Harness) -> None:
    fid, _ = svc.subscribe("serving:web", role="web", peer=SERVING, owner="team")
    assert svc.core.frameworks[fid].spec.principal == "serving"  # its identity stays its own
    # The owner's grants, not the service's: no other role, no system class, no other taint.
    d = denial_of(svc, svc.subscribe, "serving:x", role="batch", peer=SERVING, owner="team")
    assert d.denial.action == acls.REGISTER_FRAMEWORK and "principal team may not" in d.message
    d = denial_of(svc, svc.set_demands, fid, demand("d", priority_class="system"))
    assert d.denial.action == acls.USE_PRIORITY_CLASS and "principal team" in d.message
    bad = Toleration("pool", "other", effect=TaintEffect.NO_SCHEDULE)
    denial_of(svc, svc.set_demands, fid, demand("d", tolerations=(bad,)))
    svc.set_demands(fid, demand("d", priority_class="serving", tolerations=(TOLERATE,)))
    # Launching for someone it is not granted: refused, whatever else it may do.
    d = denial_of(svc, svc.subscribe, "serving:y", role="web", peer=SERVING, owner="other")
    assert d.denial.action == acls.LAUNCH_FOR and d.message.startswith(
        "principal serving may not launch for other: no rule grants it"
    )
    d = denial_of(svc, svc.subscribe, "mine", role="web", peer=TEAM, owner="team")
    assert d.denial.action == acls.LAUNCH_FOR  # a tenant may not delegate to itself either


def test_the_owners_cap_counts_its_tasks_through_the_service_and_its_own(svc: Harness) -> None:
    svc.add_agent(resources="cpus:8;mem:4096;disk:100;gpus:4", peer=NODE)
    app, _ = svc.subscribe(
        "serving:web", role="web", peer=SERVING, owner="team", gpu_resources=True
    )
    own, _ = svc.subscribe("own", role="web", peer=TEAM, gpu_resources=True)
    offer = svc.offers_for(app)[0]
    svc.accept(app, [offer.offer_id], task("t1", "cpus:1;mem:64;gpus:1"))
    assert svc.core.principal_held.of("team") == (1.0, 64.0, 0.0, 1.0)
    assert svc.core.principal_held.of("serving") == (0.0, 0.0, 0.0, 0.0)
    offer = svc.offers_for(own)[0]
    d = denial_of(svc, svc.accept, own, [offer.offer_id], task("t2", "cpus:1;mem:64;gpus:1"))
    assert "gpus 2 would exceed the cap of 1" in d.message


def test_a_failover_keeps_the_owner(svc: Harness) -> None:
    fid, _ = svc.subscribe("serving:web", role="web", peer=SERVING, owner="team")
    d = denial_of(
        svc, svc.subscribe, "serving:web", framework_id=fid, role="web", peer=SERVING, owner=""
    )
    assert "subscribed with owner 'team', not ''" in d.message
    svc.subscribe("serving:web", framework_id=fid, role="web", peer=SERVING, owner="team")


def test_a_review_answers_what_the_gates_would_for_the_subject(svc: Harness) -> None:
    from corral.master.core import authz

    acl, held = svc.core.acl, svc.core.principal_held
    ok = FrameworkSpec(framework_id="", name="x", role="web", tolerations=(TOLERATE,))
    assert authz.review(acl, TEAM, ok, [demand("d", priority_class="serving")], "", held) is None
    d = authz.review(acl, TEAM, None, [demand("d", priority_class="system")], "", held)
    assert d is not None and d.action == acls.USE_PRIORITY_CLASS
    pool = Toleration("pool", "x")
    d = authz.review(
        acl, TEAM, FrameworkSpec("", "x", role="web", tolerations=(pool,)), [], "", held
    )
    assert d is not None and d.action == acls.TOLERATE
    # Caps: count x shape, besides what the subject holds, but what the changed one holds.
    two = demand("d", "cpus:1;mem:1;gpus:1", count=2)
    d = authz.review(acl, TEAM, None, [two], "", held)
    assert d is not None and "gpus 2 would exceed the cap of 1" in d.message
    held.add("team", (1.0, 1.0, 0.0, 1.0), +1)
    one = demand("d", "cpus:1;mem:1;gpus:1", count=1)
    assert authz.review(acl, TEAM, None, [one], "", held, replaced=(1.0, 1.0, 0.0, 1.0)) is None
    assert authz.review(acl, TEAM, None, [one], "", held) is not None
    # act_for: a team's member for another, not for strangers; only "*" for the unowned.
    assert authz.review(acl, Principal("mate"), None, [], "team", held) is None
    d = authz.review(acl, OTHER, None, [], "team", held)
    assert d is not None and d.action == acls.ACT_FOR
    assert authz.review(acl, Principal("mate"), None, [], "*", held) is not None
