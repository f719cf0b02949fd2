"""corral/acl.py: the document's checks, what rules grant, and each decision's wording."""

from __future__ import annotations

import math
from typing import Any

import pytest

from corral import acl as acls
from corral.acl import AclError, Principal, acl_from_data
from corral.placement import TaintEffect, Toleration

DOC: dict[str, Any] = {
    "version": "7",
    "rules": [
        {"name": "ops", "cert_roles": ["operator"], "operator": ["*"]},
        {
            "name": "inference",
            "principals": ["inference-*"],
            "cert_roles": ["framework"],
            "frameworks": {
                "roles": ["inference"],
                "priority_classes": ["prod-inference"],
                "tolerations": ["gpu-sku=inference:NoSchedule", "spot"],
                "max_resources": {"gpus": 8},
            },
            "operator": ["read"],
        },
        {
            "name": "inference-more",
            "principals": ["inference-a"],
            "frameworks": {"roles": ["batch"], "max_resources": "gpus:4;cpus:100"},
        },
        {
            "name": "gpu-nodes",
            "principals": ["gpu-*"],
            "cert_roles": ["agent"],
            "agents": {
                "attributes": {"gpu-sku": ["inference"], "zone": ["*"]},
                "reservations": ["inference"],
                "max_resources": "cpus:64;gpus:8",
            },
        },
    ],
}

OPS = Principal("alice", frozenset({"operator"}))
INF_A = Principal("inference-a", frozenset({"framework"}))
INF_B = Principal("inference-b", frozenset({"framework"}))
BATCH = Principal("batch", frozenset({"framework"}))
GPU = Principal("gpu-1", frozenset({"agent"}))


@pytest.fixture
def acl() -> acls.Acl:
    return acl_from_data(DOC, "test")


def test_a_rule_matches_its_principals_and_cert_roles_both(acl: acls.Acl) -> None:
    assert acl.grants(INF_A).rules == ("inference", "inference-more")
    # The name matches, the certificate role does not: an agent cert named like the team.
    assert acl.grants(Principal("inference-a", frozenset({"agent"}))).rules == ("inference-more",)
    assert acl.grants(BATCH).rules == ()
    assert acl.grants(acls.ANONYMOUS).rules == ()


def test_roles_classes_and_endpoints_are_denied_unless_granted(acl: acls.Acl) -> None:
    assert acl.decide(INF_B, acls.REGISTER_FRAMEWORK, "inference") is None
    assert acl.decide(INF_A, acls.REGISTER_FRAMEWORK, "batch") is None  # a second rule adds
    denial = acl.decide(INF_B, acls.REGISTER_FRAMEWORK, "batch")
    assert denial is not None and denial.rule == ""
    assert denial.message == (
        "principal inference-b may not register a framework in role batch: no rule grants it "
        "(deny by default) (ACL 7)"
    )
    assert acl.decide(INF_B, acls.USE_PRIORITY_CLASS, "prod-inference") is None
    assert acl.decide(BATCH, acls.USE_PRIORITY_CLASS, "system") is not None
    assert acl.call(OPS, "SetQuota", "write") is None
    assert acl.call(INF_A, "GetState", "read") is None  # granted by group
    assert acl.call(INF_A, "SetWeight", "write") is not None
    assert acl.unlisted(OPS, "Drain") is not None  # not in the master's table: nobody


@pytest.mark.parametrize(
    ("toleration", "allowed"),
    [
        (Toleration("gpu-sku", "inference", effect=TaintEffect.NO_SCHEDULE), True),
        (Toleration("gpu-sku", "inference"), False),  # every effect: more than granted
        (Toleration("gpu-sku", exists=True), False),  # every value
        (Toleration("gpu-sku", "training", effect=TaintEffect.NO_SCHEDULE), False),
        (Toleration("spot", exists=True), True),  # "spot": any toleration of the key
        (Toleration("", exists=True), False),  # everything: only "*" grants it
    ],
)
def test_tolerations_are_covered_by_patterns(
    acl: acls.Acl, toleration: Toleration, allowed: bool
) -> None:
    assert (acl.tolerate(INF_B, toleration) is None) == allowed


def test_caps_are_the_largest_of_the_matching_rules(acl: acls.Acl) -> None:
    # inference caps gpus at 8 and nothing else; inference-more caps gpus 4 and cpus 100:
    # together gpus 8 (the larger) and cpus unlimited (inference grants it uncapped).
    assert acl.grants(INF_A).framework_caps == (math.inf, math.inf, math.inf, 8.0)
    assert acl.grants(INF_A).capped
    assert acl.within_caps(INF_A, acls.LAUNCH, (1000.0, 0.0, 0.0, 8.0), "x") is None
    denial = acl.within_caps(INF_A, acls.LAUNCH, (0.0, 0.0, 0.0, 9.0), "tasks holding gpus:9")
    assert denial is not None and denial.rule == "inference, inference-more"
    assert "gpus 9 would exceed the cap of 8" in denial.message


def test_agents_claim_attributes_reservations_and_resources_as_granted(acl: acls.Acl) -> None:
    assert acl.decide(GPU, acls.REGISTER_AGENT, "h") is None
    assert acl.claim_attribute(GPU, "gpu-sku", "inference") is None
    assert acl.claim_attribute(GPU, "zone", "anything") is None
    assert acl.claim_attribute(GPU, "gpu-sku", "training") is not None
    assert acl.claim_attribute(GPU, "rack", "r1") is not None  # a key not granted
    assert acl.decide(GPU, acls.RESERVE, "inference") is None
    assert acl.decide(GPU, acls.RESERVE, "batch") is not None
    denial = acl.within_caps(GPU, acls.CLAIM_RESOURCES, (1e6, 0.0, 0.0, 0.0), "cpus:1e6")
    assert denial is not None and denial.rule == "gpu-nodes"
    assert acl.decide(INF_A, acls.REGISTER_AGENT, "h") is not None


def test_an_agents_cap_refuses_what_it_does_not_name(acl: acls.Acl) -> None:
    # NodeRestriction denies by default: gpu-nodes' cap names cpus and gpus only, so a gpu
    # node may claim no mem or disk; a frameworks cap leaves what it does not name uncapped.
    assert acl.within_caps(GPU, acls.CLAIM_RESOURCES, (64.0, 0.0, 0.0, 8.0), "x") is None
    denial = acl.within_caps(GPU, acls.CLAIM_RESOURCES, (1.0, 1.0, 0.0, 0.0), "mem:1")
    assert denial is not None
    assert "mem 1 would exceed the cap of 0 (agents.max_resources names no mem" in denial.message
    assert acl.within_caps(INF_A, acls.LAUNCH, (1e6, 1e9, 1e9, 4.0), "x") is None
    # A mapping may lift a resource's cap explicitly (YAML's .inf).
    doc = {
        "rules": [
            {
                "name": "n",
                "principals": ["n"],
                "agents": {"max_resources": {"cpus": 8, "mem": math.inf}},
            }
        ]
    }
    node = Principal("n", frozenset({"agent"}))
    open_mem = acl_from_data(doc, "t")
    assert open_mem.within_caps(node, acls.CLAIM_RESOURCES, (8.0, 1e9, 0.0, 0.0), "x") is None
    refused = open_mem.within_caps(node, acls.CLAIM_RESOURCES, (8.0, 1.0, 0.0, 1.0), "gpus:1")
    assert refused is not None and "gpus 1 would exceed the cap of 0" in refused.message


@pytest.mark.parametrize(
    ("doc", "words"),
    [
        ([], "must be a mapping"),
        ({"rules": {}}, "'rules' must be a list"),
        ({"rules": [], "extra": 1}, "unknown top-level field 'extra'"),
        ({"rules": [{"name": "x"}]}, "names no principals and no cert_roles"),
        ({"rules": [{"name": "x y", "principals": ["a"]}]}, "must be a name"),
        ({"rules": [{"name": "x", "principals": [""]}]}, "non-empty strings"),
        ({"rules": [{"name": "x", "principals": ["a"], "operator": 3}]}, "list of non-empty"),
        (
            {"rules": [{"name": "x", "principals": ["a"], "frameworks": {"role": ["a"]}}]},
            "unknown field 'role'",
        ),
        (
            {
                "rules": [
                    {"name": "x", "principals": ["a"], "frameworks": {"tolerations": ["k:Soon"]}}
                ]
            },
            "effect must be one of",
        ),
        (
            {
                "rules": [
                    {"name": "x", "principals": ["a"], "frameworks": {"max_resources": {"gpu": 1}}}
                ]
            },
            "unknown resource 'gpu'",
        ),
        (
            {
                "rules": [
                    {"name": "x", "principals": ["a"], "agents": {"max_resources": {"cpus": -1}}}
                ]
            },
            "must be a number >= 0",
        ),
        (
            {"rules": [{"name": "x", "principals": ["a"]}, {"name": "x", "principals": ["b"]}]},
            "rule name 'x' is used twice",
        ),
        ({"version": True, "rules": []}, "version must be a string or a number"),
        ({"revoke_cert_roles": ["admin"], "rules": []}, "unknown certificate role 'admin'"),
        ({"revoke_cert_roles": "agent", "rules": []}, "must be a list of certificate roles"),
        (
            {
                "revoke_cert_roles": ["agent"],
                "rules": [{"name": "n", "principals": ["node-*"], "agents": {}}],
            },
            "revoke_cert_roles names 'agent', but rule 'n' grants it",
        ),
    ],
)
def test_bad_documents_are_refused_naming_the_problem(doc: Any, words: str) -> None:
    with pytest.raises(AclError, match=words.replace("(", r"\(")):
        acl_from_data(doc, "test")


def test_the_version_is_the_documents_or_its_digest() -> None:
    a = acl_from_data({"rules": []}, "x")
    b = acl_from_data({"rules": [{"name": "r", "principals": ["p"]}]}, "x")
    assert a.version.startswith("sha256:") and a.version == a.digest
    assert a.digest != b.digest
    assert acl_from_data({"version": 3, "rules": []}, "x").version == "3"
    empty = acl_from_data({"rules": []}, "x")
    assert empty.decide(OPS, acls.REGISTER_FRAMEWORK, "*") is not None  # deny by default


def test_the_builtin_grants_each_certificate_role_its_kind_of_client() -> None:
    acl = acls.builtin()
    fw = Principal("f", frozenset({"framework"}))
    agent = Principal("a", frozenset({"agent"}))
    assert acl.decide(fw, acls.USE_PRIORITY_CLASS, "system") is None
    assert acl.call(fw, "GetState", "read") is None
    assert acl.call(fw, "SetWeight", "write") is not None
    assert acl.decide(fw, acls.REGISTER_AGENT, "h") is not None
    assert acl.decide(agent, acls.REGISTER_AGENT, "h") is None
    assert acl.decide(agent, acls.REGISTER_FRAMEWORK, "*") is not None
    assert acl.call(agent, "GetState", "read") is not None
    assert acl.call(OPS, "SetWeight", "write") is None
    assert acl.decide(Principal("x"), acls.REGISTER_AGENT, "h") is not None  # no role: nothing


def test_a_reload_that_locks_out_a_certificate_role_in_use_is_named_unless_meant() -> None:
    # The whole file, and the same file cut inside its agents' rule (it still parses): every
    # agent in use would be refused from then on, the frameworks not.
    whole = acl_from_data(DOC, "t")
    cut = acl_from_data({**DOC, "rules": DOC["rules"][:-1]}, "t")
    in_use = [
        (GPU, acls.REGISTER_AGENT, "h1"),
        (Principal("gpu-2", frozenset({"agent"})), acls.REGISTER_AGENT, "h2"),
        (INF_A, acls.REGISTER_FRAMEWORK, "inference"),
    ]
    [(role, why)] = acls.lockouts(whole, cut, in_use)
    assert role == "agent"
    assert "certificate role 'agent' nothing its 2 principals in use (gpu-1, gpu-2) do" in why
    assert acls.lockouts(whole, whole, in_use) == []
    assert acls.lockouts(cut, cut, in_use) == []  # nothing in use was allowed before either
    # Meant: the file names the role it grants nothing.
    meant = acl_from_data({**DOC, "rules": DOC["rules"][:-1], "revoke_cert_roles": ["agent"]}, "t")
    assert meant.revoked == {"agent"} and acls.lockouts(whole, meant, in_use) == []
    # Revoking one principal while another of its role keeps its grant is no lockout: the
    # operator took one tenant's rule away, not every framework's.
    tenants = [
        (INF_A, acls.REGISTER_FRAMEWORK, "batch"),
        (INF_B, acls.REGISTER_FRAMEWORK, "inference"),
    ]
    fewer = acl_from_data(
        {**DOC, "rules": [r for r in DOC["rules"] if r["name"] != "inference-more"]}, "t"
    )
    assert fewer.decide(INF_A, acls.REGISTER_FRAMEWORK, "batch") is not None
    assert acls.lockouts(whole, fewer, tenants) == []


def test_an_agents_hostname_is_pinned_by_its_grant() -> None:
    # NodeRestriction pins hostnames as it pins attributes: node-* agents each on their own
    # host ({principal}), gpu agents on the GPU hosts; a rule pinning none allows any.
    doc = {
        "rules": [
            {
                "name": "nodes",
                "principals": ["node-*"],
                "agents": {"hostnames": ["{principal}", "{principal}.example.com"]},
            },
            {"name": "gpus", "principals": ["gpu-*"], "agents": {"hostnames": ["gpu-host-*"]}},
            {"name": "lab", "principals": ["lab-*"], "agents": {}},
        ]
    }
    acl = acl_from_data(doc, "t")
    node = Principal("node-1", frozenset({"agent"}))
    assert acl.claim_hostname(node, "node-1") is None
    assert acl.claim_hostname(node, "node-1.example.com") is None
    denial = acl.claim_hostname(node, "gpu-host-1")  # another node's name
    assert denial is not None and denial.action == acls.CLAIM_HOSTNAME
    assert "may not register an agent with hostname gpu-host-1" in denial.message
    assert acl.claim_hostname(Principal("node-2"), "node-1") is not None
    assert acl.claim_hostname(Principal("gpu-7"), "gpu-host-3") is None
    assert acl.claim_hostname(Principal("lab-1"), "anything") is None
    with pytest.raises(AclError, match="hostnames must be a list"):
        acl_from_data(
            {"rules": [{"name": "x", "principals": ["a"], "agents": {"hostnames": 3}}]}, "t"
        )


def test_job_queues_are_granted_by_name_or_glob_and_denied_otherwise() -> None:
    acl = acl_from_data(
        {
            "version": "q1",
            "rules": [
                {"name": "team-a", "principals": ["alice"], "jobs": {"queues": ["team-a"]}},
                {"name": "admins", "cert_roles": ["operator"], "jobs": {"queues": ["*"]}},
            ],
        },
        "test",
    )
    alice = Principal("alice", frozenset({"framework"}))
    assert acl.decide(alice, acls.SUBMIT_JOB, "team-a") is None
    denied = acl.decide(alice, acls.SUBMIT_JOB, "team-b")
    assert denied is not None and denied.message == (
        "principal alice may not submit jobs to queue team-b: no rule grants it "
        "(deny by default) (ACL q1)"
    )
    assert acl.decide(Principal("ops", frozenset({"operator"})), acls.SUBMIT_JOB, "x") is None
    with pytest.raises(AclError, match=r"rule 'bad'.jobs: unknown field 'queue'"):
        acl_from_data({"rules": [{"name": "bad", "principals": ["x"], "jobs": {"queue": []}}]}, "t")
    # No --acls: operators and frameworks may use every queue.
    assert acls.builtin().decide(alice, acls.SUBMIT_JOB, "any") is None


def test_act_for_and_launch_for_grant_by_glob_and_only_a_star_grants_the_unowned() -> None:
    acl = acl_from_data(
        {
            "rules": [
                {"name": "ops", "cert_roles": ["operator"], "act_for": ["*"]},
                {"name": "web-team", "principals": ["alice", "bob"], "act_for": ["alice", "bob"]},
                {"name": "serving", "principals": ["serving"], "launch_for": ["team-*"]},
            ]
        },
        "t",
    )
    bob, ops, svc = (
        Principal("bob"),
        Principal("root", frozenset({"operator"})),
        Principal("serving"),
    )
    assert acl.delegate(bob, acls.ACT_FOR, "alice") is None
    assert acl.delegate(ops, acls.ACT_FOR, "anyone") is None
    assert acl.delegate(ops, acls.ACT_FOR, "*") is None  # operators: the unowned too
    denial = acl.delegate(bob, acls.ACT_FOR, "carol")
    assert denial is not None and denial.message == (
        "principal bob may not act for carol: no rule grants it (deny by default) (ACL sha256:"
        + acl.digest.split(":")[1]
        + ")"
    )
    assert acl.delegate(bob, acls.ACT_FOR, "*") is not None  # a glob is not "*"
    # launch_for is its own grant: acting for an owner is not launching for it.
    assert acl.delegate(bob, acls.LAUNCH_FOR, "alice") is not None
    assert acl.delegate(svc, acls.LAUNCH_FOR, "team-a") is None
    assert acl.delegate(svc, acls.LAUNCH_FOR, "root") is not None
    with pytest.raises(AclError, match=r"rule 'x'\.launch_for must be a list"):
        acl_from_data({"rules": [{"name": "x", "principals": ["a"], "launch_for": [3]}]}, "t")
