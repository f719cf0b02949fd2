"""Mesos' executor API shapes (``include/mesos/v1/executor/executor.proto``) in JSON, from and
to Corral's wire contract: the events the agent sends an executor, the statuses it reads."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

from corral.agent.core.types import TaskState
from corral.v1 import common_pb2 as pb


class BadCall(ValueError):
    """A call the agent cannot read: answered 400 with this message."""


def record(event: Mapping[str, Any]) -> bytes:
    """One RecordIO record: ``<length>\\n<json>``."""
    data = json.dumps(event, separators=(",", ":")).encode()
    return b"%d\n%s" % (len(data), data)


def ident(value: str) -> dict[str, str]:
    return {"value": value}


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def value_of(call: Mapping[str, Any], key: str) -> str:
    inner = call.get(key)
    if not isinstance(inner, dict) or not isinstance(inner.get("value"), str):
        raise BadCall(f"{key}.value is required")
    return str(inner["value"])


def _command(c: pb.CommandInfo) -> dict[str, Any]:
    out: dict[str, Any] = {"shell": c.shell, "value": c.value}
    if c.arguments:
        out["arguments"] = list(c.arguments)
    if c.environment:  # never the secret ones: the executor has them in its environment
        out["environment"] = {
            "variables": [{"name": k, "value": v} for k, v in sorted(c.environment.items())]
        }
    return out


def executor_info(task: pb.TaskInfo, framework_id: str) -> dict[str, Any]:
    x = task.executor
    out: dict[str, Any] = {
        "type": "CUSTOM",
        "executor_id": ident(x.executor_id),
        "framework_id": ident(framework_id),
        "command": _command(task.command),
    }
    if x.name:
        out["name"] = x.name
    if x.data:
        out["data"] = b64(x.data)
    return out


def _resources(r: pb.Resources) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for name in ("cpus", "mem", "disk", "gpus"):
        amount = getattr(r, name)
        if amount > 0:
            out.append({"name": name, "type": "SCALAR", "scalar": {"value": round(amount, 3)}})
    if r.ports:
        ranges = [{"begin": p.begin, "end": p.end} for p in r.ports]
        out.append({"name": "ports", "type": "RANGES", "ranges": {"range": ranges}})
    return out


def task_info(task: pb.TaskInfo, framework_id: str, agent_id: str) -> dict[str, Any]:
    """The task as Mesos hands it to its executor in LAUNCH."""
    out: dict[str, Any] = {
        "name": task.name,
        "task_id": ident(task.task_id),
        "agent_id": ident(agent_id),
        "resources": _resources(task.resources),
        "executor": executor_info(task, framework_id),
    }
    if task.data:
        out["data"] = b64(task.data)
    if task.labels:
        out["labels"] = {"labels": [{"key": k, "value": v} for k, v in task.labels.items()]}
    return out


def subscribed(
    task: pb.TaskInfo, framework_id: str, agent_id: str, hostname: str, container_id: str
) -> dict[str, Any]:
    return {
        "type": "SUBSCRIBED",
        "subscribed": {
            "executor_info": executor_info(task, framework_id),
            # Corral's agent knows the framework by id only; Mesos' required fields filled in.
            "framework_info": {"id": ident(framework_id), "user": "", "name": ""},
            "agent_info": {"id": ident(agent_id), "hostname": hostname},
            "container_id": ident(container_id),
        },
    }


def launch(task: pb.TaskInfo, framework_id: str, agent_id: str) -> dict[str, Any]:
    return {"type": "LAUNCH", "launch": {"task": task_info(task, framework_id, agent_id)}}


def kill(task_id: str) -> dict[str, Any]:
    return {"type": "KILL", "kill": {"task_id": ident(task_id)}}


def acknowledged(task_id: str, uuid: str) -> dict[str, Any]:
    return {"type": "ACKNOWLEDGED", "acknowledged": {"task_id": ident(task_id), "uuid": uuid}}


def message(data: bytes) -> dict[str, Any]:
    return {"type": "MESSAGE", "message": {"data": b64(data)}}


def error(why: str) -> dict[str, Any]:
    return {"type": "ERROR", "error": {"message": why}}


SHUTDOWN: dict[str, Any] = {"type": "SHUTDOWN"}


MAX_MESSAGE_DATA = 1024 * 1024  # as the master's (master/framework_messages.py)


def message_data(message: Any) -> bytes:
    """A MESSAGE call's data; BadCall if missing, not base64, or too big."""
    data = message.get("data") if isinstance(message, dict) else None
    if not isinstance(data, str):
        raise BadCall("message.data is required (base64)")
    try:
        out = base64.b64decode(data, validate=True)
    except ValueError:
        raise BadCall("message.data is not base64") from None
    if len(out) > MAX_MESSAGE_DATA:
        raise BadCall(f"message.data is over {MAX_MESSAGE_DATA} bytes")
    return out


def status(update: Any) -> tuple[str, TaskState, str, str]:
    """An UPDATE's status: (task id, state, message, uuid as sent, base64)."""
    if not isinstance(update, dict) or not isinstance(update.get("status"), dict):
        raise BadCall("update.status is required")
    s = update["status"]
    task_id = value_of(s, "task_id")
    name = s.get("state")
    state = TaskState.__members__.get(name.removeprefix("TASK_")) if isinstance(name, str) else None
    if state is None or not name.startswith("TASK_"):
        raise BadCall(f"status.state {name!r} is not a Mesos task state")
    if state in (TaskState.STAGING, TaskState.UNREACHABLE, TaskState.UNKNOWN):
        raise BadCall(f"status.state {name} is not one an executor sends")
    uuid = s.get("uuid")
    if not isinstance(uuid, str) or not uuid:
        raise BadCall("status.uuid is required (the executor's, echoed in ACKNOWLEDGED)")
    try:
        base64.b64decode(uuid, validate=True)
    except ValueError:
        raise BadCall("status.uuid is not base64") from None
    text = s.get("message", "")
    return task_id, state, text if isinstance(text, str) else "", uuid
