"""The demo's view (corral/cli/demo_view.py) from a master's state and events: agents with use,
frameworks with tasks by state, the fleet's events, and the status line."""

from __future__ import annotations

from rich.console import Console

from corral.cli.demo_view import Snapshot, render, status_line
from corral.v1 import common_pb2, operator_pb2


def _snapshot() -> Snapshot:
    state = operator_pb2.State()
    a = state.agents.add(state="active", active=True)
    a.info.id, a.info.attributes["zone"] = "S1", "a"
    a.info.resources.cpus, a.info.resources.mem = 4, 4096
    a.used.cpus, a.used.mem = 1.5, 96
    for fid, name, fstate in (("F1", "serving:web", "subscribed"), ("F2", "batch:wave", "removed")):
        f = state.frameworks.add(state=fstate)
        f.info.id, f.info.name = fid, name
    for n, (fid, task_state) in enumerate(
        [
            ("F1", common_pb2.TASK_STATE_RUNNING),
            ("F1", common_pb2.TASK_STATE_RUNNING),
            ("F1", common_pb2.TASK_STATE_FAILED),
            ("F2", common_pb2.TASK_STATE_FINISHED),
        ]
    ):
        t = state.tasks.add()
        t.info.task_id, t.info.framework_id, t.info.agent_id = f"t{n}", fid, "S1"
        t.status.state = task_state
    events = [
        operator_pb2.ClusterEvent(reason="Preempted", subject="task/t9", message="preempted by F1"),
        operator_pb2.ClusterEvent(reason="DemandsSet", subject="demand/F1/web", message="hidden"),
    ]
    return Snapshot(state, events)


def test_the_live_view_shows_agents_frameworks_and_the_fleets_events() -> None:
    console = Console(record=True, width=160)
    console.print(render(_snapshot(), ["Corral demo", "  master gRPC 127.0.0.1:5050"]))
    text = console.export_text()
    agent_row = next(line for line in text.splitlines() if "S1" in line)
    assert "1.5/4" in agent_row and "96/4096" in agent_row and "│ a " in agent_row
    serving_row = next(line for line in text.splitlines() if "serving:web" in line)
    cells = [c.strip() for c in serving_row.split("│") if c.strip()]
    assert cells == ["serving:web", "subscribed", "2", "0", "1", "0", "0"]
    assert "batch:wave" not in text  # a removed run is counted, not listed
    assert "1 finished framework runs not shown" in text
    assert "preempted by F1" in text and "hidden" not in text
    assert "master gRPC 127.0.0.1:5050" in text


def test_the_status_line_counts_use_live_tasks_and_preemptions() -> None:
    line = status_line(_snapshot(), 12.0)
    assert line == "   12 s  cpus 1.5/4  live tasks: serving:web 2  preemptions 1"
