"""What `corral demo` shows while it runs: agents with their use, frameworks with their tasks
by state, the last cluster events, and the URLs. A rich live view on a terminal, a status line
every few seconds otherwise.

The live view fits the terminal it is drawn on (``render``'s width and height), degrading
rather than being cut: on a large one the whole header, boxed tables and the last
``LAST_EVENTS`` events; on a smaller one (80 x 24) the short header, tables without borders
and as many of the last events as the rest leaves room for; then fewer framework rows. Every
line is one line: a cell too long for its column ends in an ellipsis, it never wraps."""

from __future__ import annotations

import datetime
import io
from collections import Counter
from dataclasses import dataclass, field

from rich import box
from rich.console import Console, Group, RenderableType
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


def _table(title: str, columns: tuple[str, ...], boxed: bool, show_header: bool = True) -> Table:
    table = Table(
        title=title,
        title_justify="left",
        expand=False,
        box=box.HEAVY_HEAD if boxed else None,
        show_edge=boxed,
        pad_edge=boxed,
        show_header=show_header,
    )
    for col in columns:
        table.add_column(col, no_wrap=True, overflow="ellipsis")
    return table


def agents_table(snap: Snapshot, boxed: bool = True) -> Table:
    table = _table("agents", ("agent", "zone", "state", "cpus", "mem", "gpus", "tasks"), boxed)
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


def frameworks_table(snap: Snapshot, boxed: bool = True, rows: int | None = None) -> Table:
    """The frameworks not removed, by name; at most ``rows`` of them (the rest counted in the
    caption), those with live tasks first."""
    columns = ("framework", "state", "live", "finished", "failed", "killed", "other")
    table = _table("frameworks", columns, boxed)
    by_fw = snap.tasks_by_framework()
    shown = [f for f in snap.state.frameworks if f.state != "removed"]
    known = {"FINISHED", "FAILED", "KILLED"} | LIVE

    def live(f: operator_pb2.FrameworkState) -> int:
        return sum(n for s, n in by_fw.get(f.info.id, Counter()).items() if s in LIVE)

    listed = sorted(shown, key=lambda f: f.info.name)
    if rows is not None and len(listed) > rows:
        kept = {f.info.id for f in sorted(listed, key=lambda f: -live(f))[: max(0, rows)]}
        listed = [f for f in listed if f.info.id in kept]
    for f in listed:
        c = by_fw.get(f.info.id, Counter())
        table.add_row(
            f.info.name,
            f.state,
            str(live(f)),
            str(c.get("FINISHED", 0)),
            str(c.get("FAILED", 0)),
            str(c.get("KILLED", 0)),
            str(sum(n for s, n in c.items() if s not in known)),
        )
    notes = []
    if len(listed) < len(shown):
        notes.append(f"{len(shown) - len(listed)} more not shown")
    removed = len(snap.state.frameworks) - len(shown)
    if removed:
        notes.append(f"{removed} finished framework runs not shown")
    if notes:
        table.caption = "; ".join(notes)
        table.caption_justify = "left"
    return table


def _short_event_line(e: operator_pb2.ClusterEvent) -> str:
    """An event in a narrow view: its time of day (UTC), reason, subject and message."""
    when = datetime.datetime.fromtimestamp(e.timestamp, tz=datetime.UTC).strftime("%H:%M:%S")
    return f"{when} {e.reason:<17} {e.object_kind}/{e.subject}  {e.message}".rstrip()


def events_table(snap: Snapshot, count: int = LAST_EVENTS, boxed: bool = True) -> Table:
    """The last ``count`` of the fleet's events; unboxed (a small terminal), each shorter."""
    table = _table("last cluster events", ("event",), boxed, show_header=False)
    shown = [e for e in snap.events if e.reason in SHOWN]
    for e in shown[len(shown) - count :] if count > 0 else []:
        table.add_row(Text(event_line(e) if boxed else _short_event_line(e)))
    return table


def _lines(text: list[str]) -> Text:
    return Text("\n".join(text), no_wrap=True, overflow="ellipsis")


def render(
    snap: Snapshot,
    header: list[str],
    short_header: list[str] | None = None,
    width: int | None = None,
    height: int | None = None,
) -> RenderableType:
    """The view for a terminal of ``width`` x ``height`` (None: any size), as the module says:
    the fullest form that fits, ``short_header`` (default: ``header``) once it must shrink."""
    full = Group(_lines(header), agents_table(snap), frameworks_table(snap), events_table(snap))
    if height is None:
        return full
    console = Console(file=io.StringIO(), width=width or 80, height=height)

    def tall(view: RenderableType) -> int:
        return len(console.render_lines(view, console.options, pad=False))

    room = height - 1  # the live display keeps the cursor's line
    if tall(full) <= room:
        return full
    head, agents = _lines(short_header or header), agents_table(snap, boxed=False)
    frameworks = len([f for f in snap.state.frameworks if f.state != "removed"])
    for rows in range(frameworks, -1, -1):
        fixed: list[RenderableType] = [head, agents, frameworks_table(snap, boxed=False, rows=rows)]
        left = room - tall(Group(*fixed))
        if left >= 2:  # the events' title and at least one of them
            return Group(*fixed, events_table(snap, min(LAST_EVENTS, left - 1), boxed=False))
        if left >= 0 and rows <= min(frameworks, 3):
            return Group(*fixed)  # no room for events: the tables first
    return Group(head, agents)  # a tiny terminal: what it can hold (the rest is cut)


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
