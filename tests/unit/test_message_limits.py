"""One message size limit for the master, the agents and the SDK (issue 17): a message the
master accepts must never be too large for the peer it is passed on to."""

from __future__ import annotations

import pytest

from corral import limits
from corral.agent import connection
from corral.frameworks.sdk import driver, json_input
from corral.master import server


def _limits(options: object) -> dict[str, int]:
    assert isinstance(options, (list, tuple))
    return {k: v for k, v in options if k.startswith("grpc.max_") and k.endswith("message_length")}


def test_the_sdk_keeps_its_own_copy_of_the_limit_and_it_is_the_same() -> None:
    assert driver.MAX_MESSAGE_BYTES == limits.MAX_MESSAGE_BYTES


def test_master_agent_and_sdk_channels_all_use_the_one_limit() -> None:
    expected = {
        "grpc.max_send_message_length": limits.MAX_MESSAGE_BYTES,
        "grpc.max_receive_message_length": limits.MAX_MESSAGE_BYTES,
    }
    assert _limits(server.GRPC_OPTIONS) == expected
    assert _limits(connection.CHANNEL_OPTIONS) == expected
    assert _limits(driver.CHANNEL_OPTIONS) == expected


def test_json_nested_past_the_limit_is_refused_however_deep() -> None:
    fits = "[" * json_input.MAX_JSON_DEPTH + "]" * json_input.MAX_JSON_DEPTH
    assert json_input.parse_json(fits) is not None
    for deep in (
        "[" * (json_input.MAX_JSON_DEPTH + 1) + "]" * (json_input.MAX_JSON_DEPTH + 1),
        '{"a": ' * 500 + "1" + "}" * 500,  # parses, then too deep to walk by recursion
        "[" * 100_000 + "]" * 100_000,  # past Python's own recursion limit
        "[" * 100_000,  # and not even closed
    ):
        with pytest.raises(json_input.BadJson, match="nested more than 32 deep") as refused:
            json_input.parse_json(deep)
        assert refused.value.status == 400


def test_json_that_is_not_json_or_too_large_is_refused_with_its_reason() -> None:
    with pytest.raises(json_input.BadJson, match="the body is not JSON: Expecting property name"):
        json_input.parse_json("{not json")
    with pytest.raises(json_input.BadJson, match=r"x\.json is not JSON"):
        json_input.parse_json(b"\xff", "x.json")
    big = b"[" + b"1," * (json_input.MAX_JSON_BYTES // 2) + b"1]"
    with pytest.raises(json_input.BadJson, match="larger than 1048576 bytes") as refused:
        json_input.parse_json(big)
    assert refused.value.status == 413
