"""Operators' weights and quotas in the master core: refused calls change nothing, applied values
reach the allocator (they change who is offered what) and show in the roles' views."""

from __future__ import annotations

import math
import re
from typing import Any

import pytest

from corral.master.core import commands as cmd
from corral.master.core import events as ev
from corral.master.core.config import MasterConfig
from corral.master.core.master import CallRejected
from corral.roles import Quota, RoleError
from tests.unit.core_harness import Harness, of, task

INF = math.inf
NONE = (0.0, 0.0, 0.0, 0.0)
UNLIMITED = (INF, INF, INF, INF)


def set_weight(h: Harness, role: str, weight: float) -> list[cmd.Command]:
    return h.handle(ev.SetWeight(**h.base(), role=role, weight=weight))


def set_quota(
    h: Harness, role: str, guarantee: tuple[float, ...], limit: tuple[float, ...]
) -> list[cmd.Command]:
    return h.handle(ev.SetQuota(**h.base(), role=role, guarantee=guarantee, limit=limit))


def two_roles(h: Harness, agents: int) -> tuple[str, str, list[str]]:
    aids = [h.add_agent(resources="cpus:2;mem:1024;disk:100")[0] for _ in range(agents)]
    fa, _ = h.subscribe("fa", role="a")
    fb, _ = h.subscribe("fb", role="b")
    return fa, fb, aids


def offered_agents(h: Harness) -> dict[str, int]:
    counts: dict[str, int] = {}
    for batch in h.allocate():
        counts[batch.framework_id] = counts.get(batch.framework_id, 0) + len(batch.offers)
    return counts


@pytest.mark.parametrize("heavy", ["a", "b"])
def test_a_weight_changes_who_is_offered_more_in_a_cycle(heavy: str) -> None:
    # Three equal agents, two roles: each role's first agent brings its share to 1/3; the third
    # goes to the role whose share / weight is lower, the one of weight 10. Both directions are
    # tested, so the outcome is the weight's, not a tie-break's.
    h = Harness()
    fa, fb, _ = two_roles(h, agents=3)
    out = set_weight(h, heavy, 10)
    [event] = of(cmd.ClusterEvent, out)
    assert (event.kind, event.subject, event.message) == ("role_weight_set", heavy, "weight 10")
    counts = offered_agents(h)
    favoured, other = (fa, fb) if heavy == "a" else (fb, fa)
    assert counts == {favoured: 2, other: 1}


@pytest.mark.parametrize("guaranteed", ["a", "b"])
def test_a_guarantee_is_served_first(guaranteed: str) -> None:
    h = Harness()
    fa, fb, _ = two_roles(h, agents=1)
    set_quota(h, guaranteed, (2.0, 1024.0, 0.0, 0.0), UNLIMITED)
    counts = offered_agents(h)
    assert counts == {fa if guaranteed == "a" else fb: 1}


def test_a_limit_clips_offers_and_clearing_it_lifts_the_clip() -> None:
    h = Harness()
    h.add_agent(resources="cpus:4;mem:4096;disk:100")
    fid, _ = h.subscribe("fa", role="a")
    out = set_quota(h, "a", NONE, (1.0, INF, INF, INF))
    [event] = of(cmd.ClusterEvent, out)
    assert event.kind == "role_quota_set" and event.subject == "a"
    assert "limit cpus:1" in event.message
    [offer] = h.offers_for(fid)
    assert offer.resources.cpus == 1.0 and offer.resources.mem == 4096
    assert h.core.roles.quotas == {"a": Quota(NONE, (1.0, INF, INF, INF))}
    # Clearing: no guarantee and no limit. The quota is gone and the rest is offered.
    out = set_quota(h, "a", NONE, UNLIMITED)
    assert "quota none" in of(cmd.ClusterEvent, out)[0].message
    assert h.core.roles.quotas == {}
    [more] = h.offers_for(fid)
    assert more.resources.cpus == 3.0


BAD_WEIGHTS: list[tuple[str, Any, str]] = [
    ("a", -1.0, "negative"),
    ("a", 0.0, "more than 0"),
    ("a", math.nan, "NaN"),
    ("a", math.inf, "infinite"),
    ("a", 2e12, "more than the limit"),
    ("", 1.0, "the role is empty"),
    ("x" * 256, 1.0, "more than the limit of 255"),
    ("we b", 1.0, "contains ' '"),
    ("a=b", 1.0, "contains '='"),
]

BAD_QUOTAS: list[tuple[str, tuple[float, ...], tuple[float, ...], str]] = [
    ("a", (10.0, 0, 0, 0), (5.0, INF, INF, INF), "the limit of cpus (5) is below its guarantee"),
    ("a", (-1.0, 0, 0, 0), UNLIMITED, "guarantee of cpus is negative"),
    ("a", (0, math.nan, 0, 0), UNLIMITED, "guarantee of mem is NaN"),
    ("a", (0, 0, INF, 0), UNLIMITED, "guarantee of disk is infinite"),
    ("a", NONE, (INF, INF, INF, -2.0), "limit of gpus is negative"),
    ("a", NONE, (math.nan, INF, INF, INF), "limit of cpus is NaN"),
    ("a", (1.0, 0, 0), UNLIMITED, "a quota has 4 quantities"),
    ("", NONE, UNLIMITED, "the role is empty"),
]


def _snapshot(h: Harness) -> tuple[dict[str, float], dict[str, Quota]]:
    return dict(h.core.roles.weights), dict(h.core.roles.quotas)


@pytest.mark.parametrize(("role", "weight", "reason"), BAD_WEIGHTS)
def test_a_bad_weight_is_refused_and_changes_nothing(role: str, weight: Any, reason: str) -> None:
    h = Harness()
    set_weight(h, "a", 2)
    before = _snapshot(h)
    calls: list[Any] = []
    h.core.allocator.set_weight = lambda *args: calls.append(args)  # type: ignore[method-assign]
    with pytest.raises(CallRejected, match=re.escape(reason)) as info:
        set_weight(h, role, weight)
    assert info.value.code == "INVALID_ARGUMENT"
    assert _snapshot(h) == before and calls == []


@pytest.mark.parametrize(("role", "guarantee", "limit", "reason"), BAD_QUOTAS)
def test_a_bad_quota_is_refused_and_changes_nothing(
    role: str, guarantee: tuple[float, ...], limit: tuple[float, ...], reason: str
) -> None:
    h = Harness()
    set_quota(h, "a", (1.0, 0, 0, 0), (2.0, INF, INF, INF))
    before = _snapshot(h)
    calls: list[Any] = []
    h.core.allocator.set_quota = lambda *args: calls.append(args)  # type: ignore[method-assign]
    with pytest.raises(CallRejected, match=re.escape(reason)) as info:
        set_quota(h, role, guarantee, limit)
    assert info.value.code == "INVALID_ARGUMENT"
    assert _snapshot(h) == before and calls == []


def test_role_views_show_weight_quota_holdings_share_and_frameworks() -> None:
    h = Harness()
    h.add_agent(resources="cpus:4;mem:4096;disk:100")
    h.add_agent(resources="cpus:4;mem:4096;disk:100")
    fa, _ = h.subscribe("fa", role="a")
    set_weight(h, "a", 3)
    set_quota(h, "idle", (1.0, 0, 0, 0), UNLIMITED)
    first, *rest = h.offers_for(fa)
    h.accept(fa, [first.offer_id], task("t1", "cpus:1;mem:512"))
    # The accept's leftover went back; the other offers are outstanding.
    views = {v.role: v for v in h.core.role_views()}
    assert sorted(views) == ["a", "idle"]
    a = views["a"]
    assert a.weight == 3 and a.quota == Quota() and a.framework_ids == (fa,)
    assert a.offered.cpus == sum(o.resources.cpus for o in rest) > 0
    assert a.allocated.cpus == 1 + a.offered.cpus
    assert a.allocated.mem == 512 + a.offered.mem
    assert a.share == pytest.approx(max(a.allocated.cpus / 8, a.allocated.mem / 8192))
    idle = views["idle"]
    assert idle.weight == 1 and idle.quota.guarantee == (1.0, 0, 0, 0)
    assert idle.framework_ids == () and idle.share == 0 and idle.allocated.cpus == 0


def test_flags_apply_weights_and_quotas_when_the_core_is_created() -> None:
    quota = Quota((1.0, 0, 0, 0), (3.0, INF, INF, INF))
    h = Harness(config=MasterConfig(role_weights=(("a", 2.5),), role_quotas=(("a", quota),)))
    assert h.core.roles.weights == {"a": 2.5} and h.core.roles.quotas == {"a": quota}
    h.add_agent(resources="cpus:4;mem:4096;disk:100")
    fid, _ = h.subscribe("fa", role="a")
    [offer] = h.offers_for(fid)
    assert offer.resources.cpus == 3.0  # the limit reached the allocator


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({"role_weights": (("a", -1.0),)}, "negative"),
        ({"role_weights": (("", 1.0),)}, "empty"),
        ({"role_quotas": (("a", Quota((2.0, 0, 0, 0), (1.0, INF, INF, INF))),)}, "below"),
    ],
)
def test_bad_flags_make_no_config(kwargs: dict[str, Any], reason: str) -> None:
    with pytest.raises(RoleError, match=reason):
        MasterConfig(**kwargs)
