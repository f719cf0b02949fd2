"""master/core/authz.py through the core: identity, grants and caps decided with the ACL as
data and the principal from the event; a refusal is Denied and changes nothing (the harness
validates the core after every event)."""

from __future__ import annotations

import pytest

from corral import acl as acls
from corral.acl import Principal, acl_from_data
from corral.master.core import authz
from corral.master.core import commands as cmd
from corral.master.core import events as ev
from corral.master.core.refusals import Denied
from corral.master.core.types import FrameworkOwner, FrameworkSpec, ReportedTask, TaskState
from corral.placement import Taint, TaintEffect, Toleration
from corral.resources import parse_resources
from tests.unit.core_harness import Harness, demand, of, status, task

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
            "agents": {
                "attributes": {"gpu": ["yes"]},
                "max_resources": "cpus:64;mem:65536;disk:10000;gpus:4",
            },
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
    assert h.core.tasks.held.of("team") == (1.0, 64.0, 0.0, 1.0)
    offer = h.offers_for(b)[0]
    d = denial_of(h, h.accept, b, [offer.offer_id], task("t2", "cpus:1;mem:64;gpus:1"))
    assert d.denial.rule == "team" and "gpus 2 would exceed the cap of 1" in d.message
    # The first task ends: its GPU is the principal's again.
    h.agent_updates(aid, status("t1", a, aid, TaskState.FINISHED))
    assert h.core.tasks.held.of("team") == (0.0, 0.0, 0.0, 0.0)
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


def _reported(fid: str, task_id: str, owner: FrameworkOwner | None) -> ReportedTask:
    return ReportedTask(fid, task(task_id), status(task_id, fid, "", TaskState.RUNNING), owner)


def test_launches_carry_the_frameworks_owner_for_the_agent_to_keep(h: Harness) -> None:
    h.add_agent(peer=NODE)
    fid, _ = h.subscribe("web", role="web", peer=TEAM)
    [offer] = h.offers_for(fid)
    [launch] = of(cmd.SendLaunch, h.accept(fid, [offer.offer_id], task("t1")))
    assert (launch.principal, launch.role) == ("team", "web")


def test_a_framework_known_only_from_its_tasks_is_its_reported_principals(h: Harness) -> None:
    # A master that forgot its registry (no Recover): an agent comes back with its id and a
    # task of framework F, whose owner the master sealed when it launched it.
    owner = FrameworkOwner("team", "web")
    aid, _ = h.add_agent("A1", peer=NODE, sealed=True, tasks=(_reported("F-x", "t1", owner),))
    fw = h.core.frameworks["F-x"]
    assert fw.placeholder and fw.owner_reported
    assert (fw.spec.principal, fw.spec.role) == ("team", "web")  # its task counts in role web
    # Another principal (granted every role) may not subscribe with its id; its owner may.
    d = denial_of(h, h.subscribe, "web", framework_id="F-x", role="web", peer=OTHER)
    assert "framework F-x belongs to principal 'team'" in d.message
    assert d.denial.action == acls.IDENTITY
    assert h.core.frameworks["F-x"].placeholder
    fid, _ = h.subscribe("web", framework_id="F-x", role="web", peer=TEAM)
    assert not h.core.frameworks[fid].placeholder
    assert list(h.core.frameworks[fid].tasks) == ["t1"]
    assert h.core.agents[aid].tasks[(fid, "t1")].state is TaskState.RUNNING


def test_a_framework_no_report_names_an_owner_of_is_taken_over_by_nobody(h: Harness) -> None:
    # Reports without a (checked) seal: tasks launched before owners were sealed, or a forged
    # one the shell dropped.
    h.add_agent("A1", peer=NODE, sealed=True, tasks=(_reported("F-y", "t1", None),))
    assert not h.core.frameworks["F-y"].owner_reported
    for who in (TEAM, OTHER):
        d = denial_of(h, h.subscribe, "web", framework_id="F-y", role="web", peer=who)
        assert "no report says" in d.message
    # A later sealed report (another agent with another of its tasks) names the owner.
    h.add_agent(
        "A2",
        peer=NODE2,
        sealed=True,
        tasks=(_reported("F-y", "t2", FrameworkOwner("team", "web")),),
    )
    assert h.core.frameworks["F-y"].spec.role == "web"
    h.subscribe("web", framework_id="F-y", role="web", peer=TEAM)
    assert sorted(h.core.frameworks["F-y"].tasks) == ["t1", "t2"]


def test_without_principals_a_placeholder_goes_to_whoever_subscribes() -> None:
    h = Harness()  # plain text: no principals to tell apart, as before
    h.add_agent("A1", tasks=(_reported("F-z", "t1", None),))
    fid, _ = h.subscribe("anything", framework_id="F-z")
    assert list(h.core.frameworks[fid].tasks) == ["t1"]


def test_an_agent_id_the_master_forgot_goes_only_to_the_certificate_it_was_issued_to(
    h: Harness,
) -> None:
    # A master that forgot its registry (no Recover). node-1 presents gpu-node's id: its
    # secret is not the seal of that id and node-1's certificate, so it is refused, and the
    # real agent, whose secret is, comes back with its id.
    d = denial_of(h, h.add_agent, "S-gpu", peer=NODE2)
    assert "agent id 'S-gpu' is not known to this master" in d.message
    assert d.denial.action == acls.IDENTITY and "S-gpu" not in h.core.agents
    aid, out = h.add_agent("S-gpu", peer=NODE, sealed=True)
    assert aid == "S-gpu" and of(cmd.SendRegistered, out)[0].principal == "node-1"
    # Known now: another certificate is refused by the principal the master holds.
    d = denial_of(h, h.add_agent, "S-gpu", peer=NODE2, sealed=True)
    assert "belongs to principal 'node-1'" in d.message


def test_an_agents_checkpointed_principal_must_be_its_certificates(h: Harness) -> None:
    # The agent keeps the principal its id was issued to (Registered.principal): started again
    # with another certificate, it is told so, known id or not.
    d = denial_of(h, h.add_agent, "S1", peer=NODE2, sealed=True, claimed="node-1")
    assert "was issued to principal 'node-1' (the agent's checkpoint says)" in d.message
    aid, _ = h.add_agent("S1", peer=NODE, sealed=True, claimed="node-1")
    h.close_agent(aid)
    d = denial_of(h, h.add_agent, "S1", peer=NODE2, claimed="node-1")
    assert "belongs to principal 'node-1'" in d.message  # the master's own record says it first
    h.add_agent("S1", peer=NODE, claimed="node-1")  # itself again: a known id needs no seal


def test_adopt_unknown_agents_takes_in_ids_whose_secrets_were_not_sealed() -> None:
    from dataclasses import replace

    from corral.master.core.config import MasterConfig

    h = Harness(config=replace(MasterConfig(), adopt_unknown_agents=True))
    h.handle(ev.SetAcls(**h.base(), acl=acl_from_data(RULES, "test")))
    aid, _ = h.add_agent("S-old", peer=NODE)  # a secret from before seals: the operator said so
    assert h.core.agents[aid].spec.principal == "node-1"


def test_the_principals_in_use_are_connected_agents_and_subscribed_frameworks(h: Harness) -> None:
    # What a reload of the ACL must not lock out unasked (corral.acl.lockouts).
    node = Principal("node-1", frozenset({"agent"}))
    aid, _ = h.add_agent(peer=node, hostname="h1")
    team = Principal("team", frozenset({"framework"}))
    h.subscribe("web", role="web", peer=team)
    assert sorted(authz.in_use(h.core), key=str) == sorted(
        [(node, acls.REGISTER_AGENT, "h1"), (team, acls.REGISTER_FRAMEWORK, "web")], key=str
    )
    h.close_agent(aid)
    assert authz.in_use(h.core) == [(team, acls.REGISTER_FRAMEWORK, "web")]


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
    assert svc.core.tasks.held.of("team") == (1.0, 64.0, 0.0, 1.0)
    assert svc.core.tasks.held.of("serving") == (0.0, 0.0, 0.0, 0.0)
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

    acl, held = svc.core.acl, svc.core.tasks.held
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


QUEUE_RULES = {
    "version": "q1",
    "rules": [
        {"name": "team-a", "principals": ["team"], "jobs": {"queues": ["team-a"]}},
        {"name": "ops", "cert_roles": ["operator"], "jobs": {"queues": ["*"]}},
    ],
}


def test_a_review_answers_which_job_queues_a_principal_may_submit_to() -> None:
    h = Harness(acl=acl_from_data(QUEUE_RULES, "test"))

    def ask(who: Principal, queue: str) -> acls.Denial | None:
        return authz.review(h.core.acl, who, None, [], "", h.core.tasks.held, submit_to_queue=queue)

    assert ask(TEAM, "team-a") is None
    d = ask(TEAM, "team-b")
    assert d is not None and (d.action, d.object) == (acls.SUBMIT_JOB, "team-b")
    assert d.message == (
        "principal team may not submit jobs to queue team-b: no rule grants it (deny by "
        "default) (ACL q1)"
    )
    # "*" grants every queue; a principal of no rule gets none; no queue asked, nothing refused.
    operator = Principal("anna", frozenset({"operator"}))
    assert ask(operator, "team-a") is None and ask(operator, "anything") is None
    assert ask(OTHER, "team-a") is not None
    assert ask(OTHER, "") is None
    # The ACL the core has now answers: a reload that grants team-b counts at the next question.
    more = {**QUEUE_RULES, "version": "q2"}
    more["rules"] = [
        *QUEUE_RULES["rules"],
        {"name": "b", "principals": ["team"], "jobs": {"queues": ["team-b"]}},
    ]
    h.handle(ev.SetAcls(**h.base(), acl=acl_from_data(more, "test")))
    assert ask(TEAM, "team-b") is None
    # Over plain text nobody can be told apart: every queue.
    assert (
        authz.review(acls.allow_all(), OTHER, None, [], "", h.core.tasks.held, submit_to_queue="x")
        is None
    )
