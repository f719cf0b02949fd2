"""The master's board of what services publish (master/service_status.py): what it keeps, what
it refuses and why, who may replace what, and its bound."""

from __future__ import annotations

import json

import pytest

from corral.master.service_status import (
    DEFAULT_TTL,
    MAX_DOCUMENT_BYTES,
    MAX_STATUSES,
    StatusBoard,
    StatusRefused,
)

GROUPS = json.dumps({"node_groups": [{"name": "gpu", "min": 0, "max": 4}], "events": []})
EMPTY_GROUPS = json.dumps({"node_groups": []})
QUEUES = json.dumps({"queues": [{"cluster_queue": "team-a", "flavor": "default"}]})


def publish(board: StatusBoard, *args: object, **kw: object) -> None:
    try:
        board.publish(*args, **kw)  # type: ignore[arg-type]
    finally:
        board.validate()


def test_a_status_is_kept_and_read_back_with_its_age_and_publisher() -> None:
    board = StatusBoard()
    publish(board, "autoscaler", "nodegroups", "as", GROUPS, 0.0, 100.0)
    publish(board, "jobs", "queues", "jobs", QUEUES, 30.0, 101.0)
    [groups] = board.listing("nodegroups")
    seen = groups.to_json(now=110.0)
    assert seen["document"] == json.loads(GROUPS)
    assert (seen["service"], seen["principal"], seen["ttl_seconds"]) == (
        "autoscaler",
        "as",
        DEFAULT_TTL,
    )
    assert seen["age_seconds"] == 10.0 and not seen["stale"]
    assert [(s.kind, s.service) for s in board.listing()] == [
        ("nodegroups", "autoscaler"),
        ("queues", "jobs"),
    ]
    assert board.listing("queues")[0].stale(now=131.5)  # 30 s ttl from 101


@pytest.mark.parametrize(
    ("service", "kind", "document", "ttl", "says"),
    [
        ("autoscaler", "pods", GROUPS, 0.0, "kind 'pods' is not one of: nodegroups, queues"),
        ("Autoscaler", "nodegroups", GROUPS, 0.0, "service 'Autoscaler' is not a name"),
        ("", "nodegroups", GROUPS, 0.0, "service '' is not a name"),
        ("a" * 64, "nodegroups", GROUPS, 0.0, "is not a name"),
        ("as", "nodegroups", "{", 0.0, "the document is not JSON"),
        ("as", "nodegroups", '{"node_groups": [], "x": NaN}', 0.0, "NaN is not JSON"),
        ("as", "nodegroups", "[1]", 0.0, "the document is not a JSON object"),
        ("as", "nodegroups", QUEUES, 0.0, "a nodegroups document has no list 'node_groups'"),
        ("as", "queues", '{"queues": [{"name": "a"}]}', 0.0, "queues[0] is not an object"),
        ("as", "nodegroups", '{"node_groups": {"name": "a"}}', 0.0, "no list 'node_groups'"),
        ("as", "nodegroups", GROUPS, 0.5, "ttl_seconds 0.5 is not 0"),
        ("as", "nodegroups", GROUPS, -1.0, "ttl_seconds -1.0 is not 0"),
        ("as", "nodegroups", GROUPS, float("nan"), "ttl_seconds nan"),
        ("as", "nodegroups", GROUPS, 86_401.0, "ttl_seconds 86401.0"),
    ],
)
def test_a_bad_publication_is_refused_with_its_reason_and_nothing_kept(
    service: str, kind: str, document: str, ttl: float, says: str
) -> None:
    board = StatusBoard()
    with pytest.raises(StatusRefused) as refused:
        publish(board, service, kind, "p", document, ttl, 1.0)
    assert says in refused.value.message
    assert not refused.value.denied
    assert board.listing() == []


def test_a_document_past_the_bound_is_refused() -> None:
    big = json.dumps({"node_groups": [{"name": "x" * MAX_DOCUMENT_BYTES}]})
    with pytest.raises(StatusRefused, match=f"more than {MAX_DOCUMENT_BYTES}"):
        publish(StatusBoard(), "as", "nodegroups", "p", big, 0.0, 1.0)


def test_only_its_publisher_replaces_a_fresh_status_and_anyone_a_stale_one() -> None:
    board = StatusBoard()
    publish(board, "autoscaler", "nodegroups", "as", GROUPS, 10.0, 100.0)
    with pytest.raises(StatusRefused) as refused:
        publish(board, "autoscaler", "nodegroups", "mallory", EMPTY_GROUPS, 10.0, 105.0)
    assert refused.value.denied
    assert "published by principal 'as'" in refused.value.message
    assert board.listing()[0].principal == "as"
    assert board.listing()[0].document_json == GROUPS  # nothing of mallory's kept
    publish(board, "autoscaler", "nodegroups", "as", GROUPS, 10.0, 106.0)  # its own: replaced
    assert board.listing()[0].published_at == 106.0
    publish(board, "autoscaler", "nodegroups", "standby", GROUPS, 10.0, 116.5)  # stale: taken
    assert board.listing()[0].principal == "standby"
    # The same name of another kind is another status.
    publish(board, "autoscaler", "queues", "mallory", QUEUES, 0.0, 117.0)
    assert len(board.listing()) == 2


def test_the_board_is_bounded_and_gives_way_only_to_stale_statuses() -> None:
    board = StatusBoard()
    for i in range(MAX_STATUSES):
        publish(board, f"s{i}", "queues", "p", QUEUES, 10.0 + i, 0.0)
    with pytest.raises(StatusRefused, match=f"keeps {MAX_STATUSES} service statuses"):
        publish(board, "one-more", "queues", "p", QUEUES, 0.0, 5.0)
    publish(board, "s3", "queues", "p", QUEUES, 10.0, 5.0)  # a kept one is still replaced
    # At 10.5 s s0 (ttl 10 s from 0) is stale: it gives way, and only it.
    publish(board, "one-more", "queues", "p", QUEUES, 0.0, 10.5)
    names = {s.service for s in board.listing()}
    assert len(names) == MAX_STATUSES and "s0" not in names and "one-more" in names


def test_listing_an_unknown_kind_is_refused() -> None:
    with pytest.raises(StatusRefused, match="kind 'pods'"):
        StatusBoard().listing("pods")
