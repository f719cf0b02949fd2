"""The core's enums mirror the wire contract's numbers, so the shell converts with a cast."""

from __future__ import annotations

import pytest

from corral.master.core.types import TaskReason, TaskSource, TaskState
from corral.v1 import common_pb2


@pytest.mark.parametrize(
    ("core_enum", "wire_enum", "prefix"),
    [
        (TaskState, common_pb2.TaskState, "TASK_STATE_"),
        (TaskReason, common_pb2.TaskReason, "TASK_REASON_"),
        (TaskSource, common_pb2.TaskSource, "TASK_SOURCE_"),
    ],
)
def test_core_enum_matches_wire(core_enum, wire_enum, prefix) -> None:  # type: ignore[no-untyped-def]
    wire = {
        name.removeprefix(prefix): number
        for name, number in wire_enum.items()
        if name != prefix + "UNSPECIFIED" or core_enum is not TaskState
    }
    assert {m.name: m.value for m in core_enum} == wire
