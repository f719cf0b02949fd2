"""What `corral demo` shows while it runs: agents with their use, frameworks with their tasks
by state, the last cluster events, and the URLs. A rich live view on a terminal, a status line
every few seconds otherwise."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from corral.cli.events_cmd import line as event_line
from corral.cli.get_cmd import task_state_name
from corral.v1 import operator_pb2

# Events worth a line in the view: what the fleet's frameworks make happen.
SHOWN = {
    "Preempted",
    "Scheduled",
    "GangUnschedulable",
    "FailedScheduling",
    "FrameworkAdded",
    "FrameworkRemoved",
    "TaskFailed",
    "TaskLost",
    "AgentAdded",
    "AgentLost",
}
LAST_EVENTS = 8
LIVE = {"STAGING", "STARTING", "RUNNING", "KILLING"}


@dataclass
class Snapshot:
    state: operator_pb2.State
    events: list[operator_pb2.ClusterEvent] = field(default_factory=list)

    def tasks_by_framework(self) -> dict[str, Counter[str]]:
        out: dict[str, Counter[str]] = {}
        for t in self.state.tasks:
            out.setdefault(t.info.framework_id, Counter())[task_state_name(t.status.state)] += 1
        return out

    def preemptions(self) -> int:
        return sum(1 for e in self.events if e.reason == "Preempted")


def _use(used: float, total: float) -> str:
    return f"{used:g}/{total:g}"


def agents_table(snap: Snapshot) -> Table:
    table = Table(title="agents", title_justify="left", expand=False)
    for col in ("agent", "zone", "state", "cpus", "mem", "gpus", "tasks"):
        table.add_column(col)
    tasks = Counter(
        t.info.agent_id for t in snap.state.tasks if task_state_name(t.status.state) in LIVE
    )
    for a in sorted(snap.state.agents, key=lambda a: a.info.id):
        r, u = a.info.resources, a.used
        table.add_row(
            a.info.id,
            a.info.attributes.get("zone", ""),
            a.state or ("active" if a.active else "inactive"),
            _use(u.cpus, r.cpus),
            _use(u.mem, r.mem),
            _use(u.gpus, r.gpus) if r.gpus else "",
            str(tasks.get(a.info.id, 0)),
        )
    return table


def frameworks_table(snap: Snapshot) -> Table:
    table = Table(title="frameworks", title_justify="left", expand=False)
    for col in ("framework", "state", "live", "finished", "failed", "killed", "other"):
        table.add_column(col)
    by_fw = snap.tasks_by_framework()
    shown = [f for f in snap.state.frameworks if f.state != "removed"]
    for f in sorted(shown, key=lambda f: f.info.name):
        c = by_fw.get(f.info.id, Counter())
        live = sum(n for s, n in c.items() if s in LIVE)
        known = {"FINISHED", "FAILED", "KILLED"} | LIVE
        table.add_row(
            f.info.name,
            f.state,
            str(live),
            str(c.get("FINISHED", 0)),
            str(c.get("FAILED", 0)),
            str(c.get("KILLED", 0)),
            str(sum(n for s, n in c.items() if s not in known)),
        )
    removed = len(snap.state.frameworks) - len(shown)
    if removed:
        table.caption = f"{removed} finished framework runs not shown"
    return table


def events_table(snap: Snapshot) -> Table:
    table = Table(title="last cluster events", title_justify="left", show_header=False)
    table.add_column("event", overflow="fold")
    for e in [e for e in snap.events if e.reason in SHOWN][-LAST_EVENTS:]:
        table.add_row(Text(event_line(e)))
    return table


def render(snap: Snapshot, header: list[str]) -> RenderableType:
    return Group(
        Text("\n".join(header)),
        agents_table(snap),
        frameworks_table(snap),
        events_table(snap),
    )


def status_line(snap: Snapshot, elapsed: float) -> str:
    """One line for a log: use, live tasks per framework, preemptions so far."""
    cpus = sum(a.used.cpus for a in snap.state.agents)
    total = sum(a.info.resources.cpus for a in snap.state.agents)
    by_fw = snap.tasks_by_framework()
    names = {f.info.id: f.info.name for f in snap.state.frameworks if f.state != "removed"}
    live = ", ".join(
        f"{names[fid]} {sum(n for s, n in c.items() if s in LIVE)}"
        for fid, c in sorted(by_fw.items(), key=lambda kv: names.get(kv[0], ""))
        if fid in names
    )
    return (
        f"{elapsed:5.0f} s  cpus {cpus:g}/{total:g}  live tasks: {live or 'none'}  "
        f"preemptions {snap.preemptions()}"
    )
