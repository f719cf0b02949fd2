"""One message size limit for the master, the agents and the SDK (issue 17): a message the
master accepts must never be too large for the peer it is passed on to."""

from __future__ import annotations

from corral import limits
from corral.agent import connection
from corral.frameworks.sdk import driver
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
