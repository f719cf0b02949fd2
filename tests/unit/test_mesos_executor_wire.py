"""The agent's side of Mesos' executor API: the events it sends and the calls it reads
(agent/mesos_executor/wire.py)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from corral.agent.core.types import TaskState
from corral.agent.mesos_executor import wire
from corral.v1 import common_pb2 as pb


def _task() -> pb.TaskInfo:
    task = pb.TaskInfo(task_id="t1", name="one", data=b"payload")
    task.resources.cpus, task.resources.mem = 0.5, 64
    task.resources.ports.add(begin=31000, end=31001)
    task.command.value, task.command.shell = "run-it", True
    task.command.environment["A"] = "1"
    task.command.secret_environment["PW"] = "secret"
    task.executor.executor_id, task.executor.name, task.executor.data = "e1", "mine", b"x"
    task.labels["team"] = "ml"
    return task


def test_launch_hands_the_executor_its_task_as_mesos_does() -> None:
    event = wire.launch(_task(), "f1", "a1")
    assert event["type"] == "LAUNCH"
    task = event["launch"]["task"]
    assert task["task_id"] == {"value": "t1"} and task["agent_id"] == {"value": "a1"}
    assert base64.b64decode(task["data"]) == b"payload"
    assert {r["name"] for r in task["resources"]} == {"cpus", "mem", "ports"}
    executor = task["executor"]
    assert executor["executor_id"] == {"value": "e1"}
    assert executor["framework_id"] == {"value": "f1"}
    assert base64.b64decode(executor["data"]) == b"x"
    assert "secret" not in json.dumps(event)  # secret values stay in its environment only
    assert task["labels"] == {"labels": [{"key": "team", "value": "ml"}]}


def test_records_are_recordio() -> None:
    data = wire.record(wire.SHUTDOWN)
    length, _, body = data.partition(b"\n")
    assert int(length) == len(body) and json.loads(body) == {"type": "SHUTDOWN"}


def _update(**status: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "task_id": {"value": "t1"},
        "state": "TASK_RUNNING",
        "uuid": base64.b64encode(b"0123456789abcdef").decode(),
    }
    fields.update(status)
    return {"status": {k: v for k, v in fields.items() if v is not None}}


def test_an_update_reads_as_the_state_with_the_executors_uuid() -> None:
    task_id, state, message, uuid = wire.status(_update(message="up"))
    assert (task_id, state, message) == ("t1", TaskState.RUNNING, "up")
    assert base64.b64decode(uuid) == b"0123456789abcdef"


@pytest.mark.parametrize(
    ("update", "why"),
    [
        (None, "update.status is required"),
        (_update(task_id=None), "task_id.value is required"),
        (_update(state="RUNNING"), "not a Mesos task state"),
        (_update(state="TASK_STAGING"), "not one an executor sends"),
        (_update(uuid=None), "uuid is required"),
        (_update(uuid="%%%"), "not base64"),
    ],
)
def test_a_bad_update_is_a_bad_call_naming_why(update: Any, why: str) -> None:
    with pytest.raises(wire.BadCall, match=why):
        wire.status(update)


def test_message_data_is_base64_and_bounded() -> None:
    assert wire.message_data({"data": "aGk="}) == b"hi"
    with pytest.raises(wire.BadCall, match="required"):
        wire.message_data({})
    with pytest.raises(wire.BadCall, match="not base64"):
        wire.message_data({"data": "%%"})
    big = base64.b64encode(b"x" * (wire.MAX_MESSAGE_DATA + 1)).decode()
    with pytest.raises(wire.BadCall, match="over"):
        wire.message_data({"data": big})
