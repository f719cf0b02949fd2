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


def _fleet() -> Snapshot:
    """The demo's shape: four agents with ids as a master makes them, the fleet's frameworks
    (two runs ended), and more of its events than the view keeps."""
    state = operator_pb2.State()
    for i in range(4):
        a = state.agents.add(state="active", active=True)
        a.info.id = f"0afc723db71d-S{i + 1}"
        a.info.attributes["zone"] = "abc"[i % 3]
        a.info.resources.cpus, a.info.resources.mem = 4, 4096
        a.info.resources.gpus = 2 if i == 3 else 0
        a.used.cpus, a.used.mem = 3, 2048
    names = ["serving:web", "batch:wave", "batch:wave", "gang:train", "gang:train", "batch:wave"]
    for n, name in enumerate(names):
        f = state.frameworks.add(state="removed" if n in (1, 3) else "subscribed")
        f.info.id, f.info.name = f"0afc723db71d-{n:04d}", name
        t = state.tasks.add()
        t.info.task_id, t.info.framework_id = f"{name}-{n}", f.info.id
        t.info.agent_id, t.status.state = state.agents[n % 4].info.id, common_pb2.TASK_STATE_RUNNING
    events = [
        operator_pb2.ClusterEvent(
            timestamp=1_750_000_000 + i,
            reason="Scheduled",
            object_kind="demand",
            subject=f"0afc723db71d-0000/web-{i}",
            message="3 tasks launched on agents 0afc723db71d-S1, 0afc723db71d-S2, and more",
        )
        for i in range(30)
    ]
    return Snapshot(state, events)


HEADER = [
    "Corral demo: serving, batch and a gang trainer share 4 agents (docs/frameworks.md)",
    "  master gRPC   127.0.0.1:5050    try: corral get tasks --master 127.0.0.1:5050",
    "  master HTTP   https://127.0.0.1:5080/   (state: /api/v1/state, metrics: /metrics)",
    "  serving API   https://127.0.0.1:40123/v1/apps   try: corral app list --serving x",
    "  security      mutual TLS with this host's operator credential (~/.corral/tls); the "
    "page wants a token: corral token (docs/security.md)",
    "  logs          /tmp/corral-demo-abc123",
    "Press Ctrl-C to stop (a summary follows).",
]
SHORT = ["Corral demo   master 127.0.0.1:5050", "  serving x", HEADER[-1]]


def _drawn(width: int, height: int) -> list[str]:
    console = Console(record=True, width=width, height=height)
    console.print(render(_fleet(), HEADER, SHORT, width, height))
    return console.export_text().splitlines()


def test_the_live_view_fits_an_80_by_24_terminal_rather_than_being_cut() -> None:
    """Issue #40: on 80 x 24 the view took 49 lines, and the terminal showed its first 23."""
    lines = _drawn(80, 24)
    assert len(lines) <= 23, "\n".join(lines)  # the live display keeps the cursor's line
    assert max(len(line) for line in lines) <= 80
    text = "\n".join(lines)
    assert all(f"0afc723db71d-S{i}" in text for i in range(1, 5))  # every agent
    assert "serving:web" in text and "gang:train" in text and "batch:wave" in text
    assert "Ctrl-C" in text and "127.0.0.1:5050" in text
    assert "last cluster events" in text and "web-29" in text  # the newest event first kept


def test_the_live_view_degrades_with_the_terminal_and_is_whole_on_a_large_one() -> None:
    large = "\n".join(_drawn(200, 60))
    assert "security      mutual TLS" in large  # the whole header
    assert all(f"web-{i}" in large for i in range(22, 30))  # the last 8 events
    for width, height in ((80, 24), (100, 30), (60, 18), (80, 16)):
        lines = _drawn(width, height)
        assert len(lines) <= height - 1, (width, height, lines)
        assert max(len(line) for line in lines) <= width
        assert "0afc723db71d-S4" in "\n".join(lines)  # the agents come before the events
