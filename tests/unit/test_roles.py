"""corral.roles: the text and JSON forms of weights and quotas, and what they refuse."""

from __future__ import annotations

import json
import math
import re
from typing import Any

import pytest

from corral.roles import (
    Quota,
    RoleError,
    check_role,
    format_scalars,
    parse_quota,
    parse_weights,
    quota_from_json,
    quotas_from_json,
)

INF = math.inf


def test_weights_in_mesos_form() -> None:
    assert parse_weights("web=3, batch=0.5") == {"web": 3.0, "batch": 0.5}


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("web", "'web' is not role=weight"),
        ("web=x", "must be a number, got 'x'"),
        ("web=-1", "is negative"),
        ("web=0", "more than 0"),
        ("web=nan", "is NaN"),
        ("web=inf", "is infinite"),
        ("web=1,web=2", "appears twice"),
        ("=2", "the role is empty"),
        ("", "no role=weight given"),
    ],
)
def test_bad_weights_are_refused_with_a_reason(text: str, reason: str) -> None:
    with pytest.raises(RoleError, match=re.escape(reason)):
        parse_weights(text)


def test_a_limit_bounds_only_the_resources_it_names() -> None:
    q = parse_quota("web", "cpus:10;mem:4096", "cpus:40")
    assert q == Quota((10.0, 4096.0, 0.0, 0.0), (40.0, INF, INF, INF))
    assert str(q) == "guarantee cpus:10;mem:4096, limit cpus:40"
    assert q.to_json() == {"guarantee": {"cpus": 10.0, "mem": 4096.0}, "limit": {"cpus": 40.0}}
    assert quota_from_json("web", q.to_json()) == q
    assert parse_quota("web", None, None).is_none()
    assert format_scalars((0.0, 0.0, 0.0, 0.0)) == "-"


@pytest.mark.parametrize(
    ("guarantee", "limit", "reason"),
    [
        ("cpus:10", "cpus:5", "the limit of cpus (5) is below its guarantee (10)"),
        ("foo:1", None, "guarantee: unknown resource 'foo'"),
        ("ports:[1-2]", None, "unknown resource 'ports'"),
        ("cpus:-1", None, "guarantee: cpus is negative"),
        (None, "mem:nan", "limit: mem is NaN"),
        ("cpus", None, "has no ':'"),
        ("cpus:1;cpus:2", None, "cpus appears twice"),
        ("cpus:2e12", None, "more than the limit"),
    ],
)
def test_bad_quotas_are_refused_with_a_reason(
    guarantee: str | None, limit: str | None, reason: str
) -> None:
    with pytest.raises(RoleError, match=re.escape(reason)):
        parse_quota("web", guarantee, limit)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ('{"guarantee": {"cpus": NaN}}', "cpus is NaN"),
        ('{"limit": {"cpus": Infinity}}', "cpus is infinite"),
        ('{"guarantee": {"cpus": "10"}}', "cpus must be a number, got '10'"),
        ('{"guarantee": {"cpus": true}}', "cpus must be a number, got True"),
        ('{"guarantee": 10}', "must be a string like 'cpus:10;mem:4096' or an object"),
        ('{"guarantees": "cpus:1"}', "unknown key 'guarantees'"),
        ('{"limit": {"tpus": 1}}', "unknown resource 'tpus'"),
        ("[1]", "must be an object"),
    ],
)
def test_bad_json_quotas_are_refused_with_a_reason(body: str, reason: str) -> None:
    with pytest.raises(RoleError, match=re.escape(reason)):
        quota_from_json("web", json.loads(body))


def test_the_quotas_file_form() -> None:
    body: Any = {"web": {"guarantee": "cpus:10", "limit": {"cpus": 40}}, "batch": {}}
    quotas = quotas_from_json(body)
    assert quotas["web"] == Quota((10.0, 0, 0, 0), (40.0, INF, INF, INF))
    assert quotas["batch"].is_none()
    with pytest.raises(RoleError, match="must be a JSON object"):
        quotas_from_json([])
    with pytest.raises(RoleError, match="contains ' '"):
        quotas_from_json({"we b": {}})


@pytest.mark.parametrize("role", ["*", "web", "eng/web", "a.b", "web-1", "..a", "ä", "a/b/c"])
def test_role_names_mesos_accepts_are_accepted(role: str) -> None:
    assert check_role(role) == role


@pytest.mark.parametrize(
    ("role", "reason"),
    [
        ("..", "'..' as a component ('.' and '..' name no role)"),
        (".", "'.' as a component"),
        ("a/../b", "'..' as a component"),
        ("a/.", "'.' as a component"),
        ("/a", "empty component"),
        ("a/", "empty component"),
        ("a//b", "empty component"),
        ("-a", "starting with '-'"),
        ("a/-b", "starting with '-': '-b'"),
        ("*/a", "'*' is the default role, alone"),
        ("a b", "contains ' '"),
        ("a\tb", "contains '\\t'"),
        ("a\nb", "contains '\\n'"),
        ("a\x00b", "contains '\\x00'"),
        ("a\x7fb", "contains '\\x7f'"),
        ("a,b", "contains ','"),
        ("", "the role is empty"),
        ("r" * 256, "more than the limit of 255"),
    ],
)
def test_role_names_mesos_refuses_are_refused_with_a_reason(role: str, reason: str) -> None:
    with pytest.raises(RoleError, match=re.escape(reason)):
        check_role(role)
    # ... wherever a role name is read: weights, quotas (text and JSON).
    if role and "," not in role and "=" not in role:
        with pytest.raises(RoleError, match=re.escape(reason)):
            parse_weights(f"{role}=2")
    with pytest.raises(RoleError, match=re.escape(reason)):
        quotas_from_json({role: {"limit": "cpus:1"}})
