"""`corral get` tables: whole ids however narrow the terminal or the pipe, cells printed as data,
``-o wide`` columns, and states read from a master too old to send them."""

from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from corral.cli.get_cmd import rows
from corral.cli.table import _print_rich, natural_width, print_table
from corral.v1 import common_pb2 as pb
from corral.v1 import operator_pb2 as op

LONG_ID = "739e0553a8c94f2e9d1b6a7c5e3f1d2b-0001-framework-with-a-long-name"


def _printed(cols: list[str], table: list[list[str]], **kw: str) -> str:
    out = io.StringIO()  # not a terminal: as when piped
    print_table(cols, table, file=out, **kw)
    return out.getvalue()


def test_long_ids_are_printed_whole_and_on_one_line() -> None:
    state = op.State(
        tasks=[
            op.TaskEntry(
                info=pb.TaskInfo(
                    task_id=f"task-{LONG_ID}",
                    framework_id=LONG_ID,
                    agent_id=f"agent-{LONG_ID}",
                    resources=pb.Resources(cpus=1, mem=64),
                ),
                status=pb.TaskStatus(state=pb.TASK_STATE_RUNNING, message="x" * 200),
            )
        ]
    )
    cols, table, _ = rows("tasks", state)
    text = _printed(cols, table)
    _, row = text.splitlines()
    assert "…" not in text
    assert row.split() == [
        f"task-{LONG_ID}",
        LONG_ID,
        f"agent-{LONG_ID}",
        "-",  # host: the agent is not in the state
        "-",  # zone
        "RUNNING",
        "-",  # reason
        "-",  # age: no launch time
        "-",  # health: no check
        "cpus:1",
        "mem:64",
        "-",  # ports
        "x" * 60,  # the message is cut to 60 characters, except with -o wide
    ]
    assert len(row) > 80  # wider than the console rich assumes for a pipe


def test_cells_are_data_not_markup_and_an_empty_table_says_so() -> None:
    text = _printed(["ID", "RESOURCES"], [["a1", "ports:[31000-32000] [bold]x[/bold]"]])
    assert "ports:[31000-32000] [bold]x[/bold]" in text
    assert _printed(["ID"], [], empty="(no agents)").splitlines() == [" ID ", "(no agents)"]
    assert natural_width(["ID", "N"], [["abc", "two\nlines"]]) == 3 + 5 + 4


def test_wide_adds_columns_after_the_default_ones() -> None:
    state = op.State(
        tasks=[
            op.TaskEntry(
                info=pb.TaskInfo(task_id="t1", name="web", priority_class="serving", demand="web"),
                status=pb.TaskStatus(
                    state=pb.TASK_STATE_KILLED, reason=pb.TASK_REASON_PREEMPTED, message="m" * 70
                ),
            )
        ],
        offers=[
            pb.Offer(id="o1", attributes={"zone": "a", "rack": "r1"}, gang_id="g1"),
        ],
    )
    cols, _, _ = rows("tasks", state)
    wcols, wtable, _ = rows("tasks", state, wide=True)
    assert wcols[: len(cols)] == cols
    assert wcols[len(cols) :] == ["NAME", "PRIORITY CLASS", "DEMAND", "LIMITS", "CPUS USED"]
    assert wtable[0][len(cols) :] == ["web", "serving", "web", "", ""]
    assert wtable[0][cols.index("REASON")] == "PREEMPTED"
    assert wtable[0][cols.index("MESSAGE")] == "m" * 70
    ocols, otable, _ = rows("offers", state, wide=True)
    assert dict(zip(ocols, otable[0], strict=True))["ATTRIBUTES"] == "rack=r1,zone=a"
    assert dict(zip(ocols, otable[0], strict=True))["GANG"] == "g1"


def test_states_come_from_the_master_or_from_the_older_flags() -> None:
    state = op.State(
        agents=[
            op.AgentState(info=pb.AgentInfo(id="a1"), active=False, state="recovering"),
            op.AgentState(info=pb.AgentInfo(id="a2"), active=True),  # an older master
            op.AgentState(info=pb.AgentInfo(id="a3"), active=False),
        ],
        frameworks=[
            op.FrameworkState(info=pb.FrameworkInfo(id="f1"), state="removed"),
            op.FrameworkState(info=pb.FrameworkInfo(id="f2"), connected=True),
        ],
    )
    cols, table, _ = rows("agents", state)
    assert [r[cols.index("STATE")] for r in table] == ["recovering", "active", "inactive"]
    cols, table, _ = rows("frameworks", state)
    assert [r[cols.index("STATE")] for r in table] == ["removed", "subscribed"]


def test_demands_show_their_spread_and_taints_their_effect() -> None:
    spread = pb.TopologySpread(
        topology_key="zone",
        max_skew=1,
        when_unsatisfiable=pb.WHEN_UNSATISFIABLE_SCHEDULE_ANYWAY,
    )
    state = op.State(
        frameworks=[
            op.FrameworkState(
                info=pb.FrameworkInfo(id="f1"),
                demands=[
                    op.DemandState(
                        demand=pb.Demand(name="web", count=3, spread=spread), tasks=2, unmet=1
                    )
                ],
            )
        ],
        agents=[
            op.AgentState(
                info=pb.AgentInfo(
                    id="a1",
                    taints=[pb.Taint(key="spot", value="true", effect=pb.TAINT_EFFECT_NO_SCHEDULE)],
                )
            )
        ],
    )
    cols, table, _ = rows("frameworks", state, wide=True)
    assert table[0][cols.index("DEMANDS")] == "web 2/3 (spread zone max_skew=1 ScheduleAnyway)"
    assert table[0][cols.index("UNMET")] == "1"
    cols, table, _ = rows("agents", state)
    assert table[0][cols.index("TAINTS")] == "spot=true:NoSchedule"


def test_the_allocation_interval_options_say_what_they_do() -> None:
    import argparse

    from corral.cli.main import build_parser

    def option(parser: argparse.ArgumentParser, *path: str) -> argparse.Action:
        for name in path:
            (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
            parser = sub.choices[name]
        (action,) = [a for a in parser._actions if "--allocation-interval" in a.option_strings]
        return action

    for path in (("master",), ("loadtest",)):
        assert "allocation cycles" in (option(build_parser(), *path).help or ""), path


_CELL = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r"),
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(
    columns=st.lists(st.text(alphabet="ABCDEFGH ", min_size=1, max_size=8), min_size=1, max_size=4),
    data=st.data(),
)
def test_the_layout_of_printable_rows_is_richs_and_anything_else_goes_through_rich(
    columns: list[str], data: st.DataObject
) -> None:
    rows = data.draw(
        st.lists(st.lists(_CELL, min_size=len(columns), max_size=len(columns)), max_size=6)
    )
    printed = _printed(columns, rows)
    widths = natural_width(columns, rows)
    expected = io.StringIO()
    _print_rich(Console(file=expected, width=widths, soft_wrap=False), columns, rows, "")
    assert printed == expected.getvalue()


def _agent(aid: str, host: str, name: str, **fields: object) -> op.AgentState:
    res = pb.Resources(cpus=4, mem=4096, ports=[pb.Range(begin=31000, end=31009)])
    return op.AgentState(
        info=pb.AgentInfo(
            id=aid, hostname=host, name=name, resources=res, attributes={"zone": "a"}
        ),
        used=pb.Resources(cpus=1.5, mem=1024),
        state="active",
        connected=True,
        **fields,  # type: ignore[arg-type]
    )


def test_agents_show_name_zone_free_of_total_ports_and_maintenance() -> None:
    state = op.State(
        agents=[
            _agent("a1", "node", "left"),
            _agent("a2", "node", "right", maintenance=op.Maintenance(mode="cordoned")),
            _agent("a3", "other", "x", maintenance=op.Maintenance(mode="draining")),
            _agent("a4", "other2", "y", maintenance=op.Maintenance(mode="draining", drained=True)),
        ]
    )
    cols, table, _ = rows("agents", state)
    by_id = {row[0]: dict(zip(cols, row, strict=True)) for row in table}
    assert by_id["a1"]["NAME"] == "left" and by_id["a1"]["ZONE"] == "a"
    assert (by_id["a1"]["CPUS"], by_id["a1"]["MEM"]) == ("2.5/4", "3072/4096")
    assert by_id["a1"]["PORTS"] == "31000-31009" and by_id["a1"]["GPUS"] == "-"
    assert [by_id[a]["STATE"] for a in ("a1", "a2", "a3", "a4")] == [
        "active",
        "cordoned",
        "draining",
        "drained",
    ]


def test_tasks_tell_apart_agents_of_one_host_and_show_age_zone_ports() -> None:
    task_res = pb.Resources(cpus=1, ports=[pb.Range(begin=31002, end=31002)])
    state = op.State(
        agents=[_agent("a1", "node", "left"), _agent("a2", "node", "right")],
        tasks=[
            op.TaskEntry(
                info=pb.TaskInfo(task_id="t1", agent_id="a2", resources=task_res),
                status=pb.TaskStatus(state=pb.TASK_STATE_RUNNING, healthy=False),
                launched_at=1000.0,
            )
        ],
    )
    cols, table, records = rows("tasks", state, now=1000.0 + 3 * 3600 + 5)
    row = dict(zip(cols, table[0], strict=True))
    assert row["HOST"] == "node/right"  # two agents on "node": the name tells them apart
    assert (row["ZONE"], row["AGE"], row["PORTS"], row["HEALTH"]) == (
        "a",
        "3h",
        "31002",
        "unhealthy",
    )
    assert records[0]["resources"]["ports"] == [[31002, 31002]] and records[0]["healthy"] is False


def test_a_watch_compares_what_a_person_watches_not_measurements() -> None:
    """`corral get -w` (issue #40): a task's memory use or an agent's heartbeat changes no
    row; a state does, and so does an agent's memory pressure level (a condition)."""
    from corral.cli.watch import watched

    task = {"id": "t", "state": "RUNNING", "usage": {"mem": 10.0}, "updated_at": 1.0}
    assert watched("tasks", task) == watched(
        "tasks", {**task, "usage": {"mem": 11.0}, "updated_at": 2.0}
    )
    assert watched("tasks", task) != watched("tasks", {**task, "state": "KILLED"})
    agent = {"id": "a", "last_seen": 1.0, "usage": {"mem_used": 5.0, "memory_pressure": ""}}
    assert watched("agents", agent) == watched(
        "agents", {**agent, "last_seen": 2.0, "usage": {"mem_used": 9.0, "memory_pressure": ""}}
    )
    assert watched("agents", agent) != watched(
        "agents", {**agent, "usage": {"mem_used": 9.0, "memory_pressure": "hard"}}
    )
