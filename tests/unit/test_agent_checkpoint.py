"""The agent's checkpoint files: task records round-trip, ids stay apart, the config rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from corral.agent.checkpoint import AgentConfigCheckpoint, ConfigChanged, TaskCheckpoints, task_dir
from corral.v1 import common_pb2


def test_a_task_record_round_trips_and_is_forgotten(tmp_path: Path) -> None:
    store = TaskCheckpoints(tmp_path)
    info = common_pb2.TaskInfo(task_id="t/1", name="x")
    latest = common_pb2.TaskStatus(task_id="t/1", state=common_pb2.TASK_STATE_RUNNING, uuid=b"u2")
    first = common_pb2.TaskStatus(task_id="t/1", state=common_pb2.TASK_STATE_STARTING, uuid=b"u1")
    store.save(info, "fw", latest, [first, latest])
    (record,) = store.load()[0]
    assert (record.task, record.framework_id, record.latest) == (info, "fw", latest)
    assert record.pending == (first, latest)
    assert record.process is None and record.exit_status is None
    store.forget("fw", "t/1")
    assert store.load() == ([], [])


def test_ids_that_differ_only_in_unsafe_characters_get_different_folders(tmp_path: Path) -> None:
    assert task_dir(tmp_path, "f", "a/b") != task_dir(tmp_path, "f", "a_b")
    assert task_dir(tmp_path, "f", "..").parent == tmp_path / "tasks" / "f"


def test_an_unreadable_task_file_is_skipped_with_a_problem_line(tmp_path: Path) -> None:
    store = TaskCheckpoints(tmp_path)
    broken = task_dir(tmp_path, "fw", "t")
    broken.mkdir(parents=True)
    (broken / "task.json").write_text("{not json")
    assert store.load()[0] == []
    assert len(store.load()[1]) == 1


def test_a_changed_configuration_is_refused_naming_what_changed(tmp_path: Path) -> None:
    configs = AgentConfigCheckpoint(tmp_path)
    old = {"hostname": "h", "resources": "cpus:4", "attributes": {}, "taints": []}
    configs.check(old)  # nothing saved yet: anything goes
    configs.save(old)
    configs.check(dict(old))
    with pytest.raises(ConfigChanged) as refused:
        configs.check({**old, "resources": "cpus:8", "attributes": {"zone": "a"}})
    message = str(refused.value)
    assert (
        "resources 'cpus:4' -> 'cpus:8'" in message and "attributes {} -> {'zone': 'a'}" in message
    )
    assert str(tmp_path / "agent_id") in message and "hostname" not in message
