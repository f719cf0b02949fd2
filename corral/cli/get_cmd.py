"""`corral get agents|frameworks|tasks|offers|roles|priorityclasses`: the master's state through
the Operator API (roles through GetRoles: weight, quota, what each holds, its share and
frameworks; priority classes through GetPriorityClasses, highest value first).

Tables print every cell whole (ids can be pasted into the next command); ``-o wide`` adds the
columns that make a row long: a framework's offer constraints, tolerations and demands, a
task's name, reason and demand, an offer's attributes and gang."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from corral.cli.common import add_master_arg, add_timeout_arg
from corral.cli.errors import CliError
from corral.cli.operator_client import call_operator
from corral.cli.table import TableStream, print_table
from corral.master import paging
from corral.master.core.states import agent_shown
from corral.master.http import state_json
from corral.resources import SCALARS
from corral.v1 import common_pb2, operator_pb2

KINDS = (
    "agents",
    "frameworks",
    "tasks",
    "offers",
    "roles",
    "priorityclasses",
    "nodegroups",
    "services",
)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "get",
        help="list agents, frameworks, tasks, offers, roles, priority classes, node groups or "
        "the statuses services publish to the master",
    )
    p.add_argument("kind", choices=KINDS, help="what to list")
    p.add_argument(
        "-o",
        "--output",
        choices=("table", "wide", "json"),
        default="table",
        help="a table (default), a table with more columns, or JSON",
    )
    p.add_argument(
        "-w",
        "--watch",
        action="store_true",
        help=(
            "after the list, print each object again when it changes (its state, agent, "
            "reason, ...; not its measured use); Ctrl-C ends it"
        ),
    )
    p.add_argument(
        "--autoscaler",
        default=None,
        metavar="URL",
        help="nodegroups: the autoscaler's API (default $CORRAL_AUTOSCALER, else "
        "https://127.0.0.1:5092)",
    )
    p.add_argument(
        "--chunk-size",
        type=_chunk_size,
        default=paging.DEFAULT_LIMIT,
        metavar="N",
        help="agents, frameworks, tasks, offers: read the master N at a time, printing each page "
        f"as it comes (kubectl's --chunk-size; default {paging.DEFAULT_LIMIT}, "
        f"at most {paging.MAX_LIMIT})",
    )
    p.add_argument(
        "--limit",
        type=_count_limit,
        default=0,
        metavar="N",
        help="agents, frameworks, tasks, offers: only the first N, in id order (default: all)",
    )
    add_timeout_arg(p)
    add_master_arg(p)
    p.set_defaults(func=run)


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None


def _chunk_size(text: str) -> int:
    value = _integer(text)
    if not 1 <= value <= paging.MAX_LIMIT:
        raise argparse.ArgumentTypeError(f"must be between 1 and {paging.MAX_LIMIT}, got {value}")
    return value


def _count_limit(text: str) -> int:
    value = _integer(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


# The kinds read a page at a time (Operator ListAgents, ListFrameworks, ListTasks, ListOffers):
# the RPC and its request.
PAGED = {
    "agents": ("ListAgents", operator_pb2.ListAgentsRequest),
    "frameworks": ("ListFrameworks", operator_pb2.ListFrameworksRequest),
    "tasks": ("ListTasks", operator_pb2.ListTasksRequest),
    "offers": ("ListOffers", operator_pb2.ListOffersRequest),
}


def pages(
    kind: str, master: str, timeout: float, chunk_size: int, limit: int = 0
) -> Iterator[operator_pb2.State]:
    """``kind``'s objects a page at a time, in id order, each page as a State holding that page
    (and what its rows need: a task page's agents, a framework page's priority classes), so
    ``rows`` makes its table. ``limit``: at most that many in all (0: every one). Each page is
    asked of the leading master (a failover between two pages goes on with the new leader: a
    page token is only the last id seen)."""
    method, request_type = PAGED[kind]
    token = ""
    left = limit or None
    while True:
        size = chunk_size if left is None else min(chunk_size, left)
        page = call_operator(master, method, request_type(limit=size, page_token=token), timeout)
        state = operator_pb2.State(master_id=page.master_id)
        if kind == "agents":
            state.agents.extend(page.agents)
            n = len(page.agents)
        elif kind == "frameworks":
            state.frameworks.extend(page.frameworks)
            state.priority_classes.extend(page.priority_classes)
            n = len(page.frameworks)
        elif kind == "offers":
            state.offers.extend(page.offers)
            n = len(page.offers)
        else:
            state.tasks.extend(page.tasks)
            for info in page.agents:
                state.agents.add().info.CopyFrom(info)
            n = len(page.tasks)
        yield state
        token = page.next_page_token
        if left is not None:
            left -= n
            if left <= 0:
                return
        if not token:
            return


def fetch_state(
    master: str, timeout: float, request: operator_pb2.GetStateRequest | None = None
) -> operator_pb2.State:
    """GetState: the whole state, or the part ``request``'s scope names."""
    state: operator_pb2.State = call_operator(
        master, "GetState", request or operator_pb2.GetStateRequest(), timeout
    )
    return state


def _res(r: common_pb2.Resources) -> str:
    parts = [f"{n}:{getattr(r, n):g}" for n in ("cpus", "mem", "disk", "gpus") if getattr(r, n)]
    return " ".join(parts) or "-"


def task_state_name(value: int) -> str:
    """RUNNING for TASK_STATE_RUNNING: how every table shows a task's state."""
    return common_pb2.TaskState.Name(value).removeprefix("TASK_STATE_")


def _reason_name(value: int) -> str:
    return "" if not value else common_pb2.TaskReason.Name(value).removeprefix("TASK_REASON_")


# As written on the command line (corral agent --taints, corral.placement).
_EFFECTS = {
    common_pb2.TAINT_EFFECT_NO_SCHEDULE: "NoSchedule",
    common_pb2.TAINT_EFFECT_PREFER_NO_SCHEDULE: "PreferNoSchedule",
    common_pb2.TAINT_EFFECT_NO_EXECUTE: "NoExecute",
}


def _taint(t: common_pb2.Taint) -> str:
    effect = _EFFECTS.get(t.effect)
    return f"{t.key}={t.value}:{effect}" if effect else f"{t.key}={t.value}"


def _toleration(t: common_pb2.Toleration) -> str:
    text = (
        f"{t.key} exists"
        if t.operator == common_pb2.TOLERATION_OPERATOR_EXISTS
        else f"{t.key}={t.value}"
    )
    effect = _EFFECTS.get(t.effect)
    return f"{text}:{effect}" if effect else text


def _constraint(c: common_pb2.AttributeConstraint) -> str:
    if c.operator == common_pb2.CONSTRAINT_OPERATOR_EXISTS:
        return f"{c.attribute} exists"
    if c.operator == common_pb2.CONSTRAINT_OPERATOR_IN:
        return f"{c.attribute} in ({','.join(c.values)})"
    return f"{c.attribute}={c.values[0] if c.values else ''}"


def _spread(s: common_pb2.TopologySpread) -> str:
    when = (
        "ScheduleAnyway"
        if s.when_unsatisfiable == common_pb2.WHEN_UNSATISFIABLE_SCHEDULE_ANYWAY
        else "DoNotSchedule"
    )
    return f"spread {s.topology_key} max_skew={s.max_skew} {when}"


def _demand(d: operator_pb2.DemandState) -> str:
    """``web 2/3 (zone=a; spread zone max_skew=1 DoNotSchedule)``: name, live tasks of count,
    then its placement rules, if it has any."""
    rules = [_constraint(c) for c in d.demand.constraints]
    rules += [f"tolerates {_toleration(t)}" for t in d.demand.tolerations]
    if d.demand.spread.topology_key:
        rules.append(_spread(d.demand.spread))
    text = f"{d.demand.name} {d.tasks}/{d.demand.count}"
    return f"{text} ({'; '.join(rules)})" if rules else text


def _joined(items: list[str]) -> str:
    return ", ".join(items) or "-"


def _memory(a: operator_pb2.AgentState) -> str:
    """``used/total MiB`` as the agent measured it, with its pressure: ``900/1024 hard``."""
    if not a.HasField("usage"):
        return ""
    u = a.usage
    text = f"{u.mem_used:.0f}/{u.mem_total:.0f}"
    return f"{text} {u.memory_pressure}" if u.memory_pressure else text


def _pressure(a: operator_pb2.AgentState) -> str:
    return a.usage.pressure_message if a.HasField("usage") else ""


def _revocable(a: operator_pb2.AgentState) -> str:
    """Revocable resources: held by revocable tasks / estimated."""
    if not a.HasField("usage"):
        return ""
    est, used = a.usage.revocable, a.revocable_used
    if not (est.cpus or est.mem or used.cpus or used.mem):
        return ""
    return f"cpus {used.cpus:g}/{est.cpus:.2f}, mem {used.mem:g}/{est.mem:.0f}"


def agent_state(a: operator_pb2.AgentState) -> str:
    """active, unreachable or recovering (a master too old to say: active or inactive)."""
    return a.state or ("active" if a.active else "inactive")


def framework_state(f: operator_pb2.FrameworkState) -> str:
    """subscribed, disconnected or removed (a master too old to say: from ``connected``)."""
    return f.state or ("subscribed" if f.connected else "disconnected")


def _limit(q: operator_pb2.Quota) -> dict[str, float]:
    return {n: getattr(q.limit, n) for n in SCALARS if q.limit.HasField(n)}


def _guarantee(q: operator_pb2.Quota) -> dict[str, float]:
    return {n: getattr(q.guarantee, n) for n in SCALARS if getattr(q.guarantee, n)}


def _spec(values: dict[str, float]) -> str:
    return ";".join(f"{n}:{v:g}" for n, v in values.items()) or "-"


def role_rows(roles: operator_pb2.Roles) -> tuple[list[str], list[list[str]], list[dict[str, Any]]]:
    """Column names, table rows and JSON records (as the master's /api/v1/roles) of roles."""
    cols = ["ROLE", "WEIGHT", "GUARANTEE", "LIMIT", "ALLOCATED", "OFFERED", "SHARE", "FRAMEWORKS"]
    table = [
        [
            r.role,
            f"{r.weight:g}",
            _spec(_guarantee(r.quota)),
            _spec(_limit(r.quota)),
            _res(r.allocated),
            _res(r.offered),
            f"{r.share:.3f}",
            ",".join(r.framework_ids),
        ]
        for r in roles.roles
    ]
    records = [state_json.role(r) for r in roles.roles]
    return cols, table, records


def service_rows(
    statuses: operator_pb2.ServiceStatuses,
) -> tuple[list[str], list[list[str]], list[dict[str, Any]]]:
    """What services publish to the master (``GetServiceStatuses``; the web UI's node groups and
    queues views): one row per service, as /api/v1/services/status lists them."""
    cols = ["KIND", "SERVICE", "PUBLISHER", "AGE", "STATUS", "ITEMS"]
    table = []
    records = []
    for s in statuses.statuses:
        document = json.loads(s.document_json)
        items = document.get({"nodegroups": "node_groups"}.get(s.kind, s.kind), [])
        age = s.age_seconds
        table.append(
            [
                s.kind,
                s.service,
                s.principal or "-",
                f"{age:.0f}s",
                "stale" if s.stale else "fresh",
                str(len(items)),
            ]
        )
        records.append(
            {
                "service": s.service,
                "kind": s.kind,
                "principal": s.principal,
                "published_at": s.published_at,
                "age_seconds": round(age, 3),
                "ttl_seconds": s.ttl_seconds,
                "stale": s.stale,
                "document": document,
            }
        )
    return cols, table, records


def priority_class_rows(
    classes: operator_pb2.PriorityClasses,
) -> tuple[list[str], list[list[str]], list[dict[str, Any]]]:
    """Column names, table rows and JSON records (as the master's /api/v1/priorityclasses)."""
    cols = ["NAME", "VALUE", "PREEMPTION", "DEFAULT", "DESCRIPTION"]
    table = [
        [
            c.name,
            str(c.value),
            c.preemption_policy,
            "yes" if c.global_default else "",
            c.description,
        ]
        for c in classes.priority_classes
    ]
    records = [state_json.priority_class(c) for c in classes.priority_classes]
    return cols, table, records


def age(seconds: float) -> str:
    """kubectl's ages: 42s, 5m, 3h, 2d."""
    if seconds < 0:
        return "0s"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size * (2 if unit == "d" else 1):
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"


def ports_text(r: common_pb2.Resources) -> str:
    """``31000-31009,31020``, or ``-``."""
    return (
        ",".join(f"{p.begin}" if p.begin == p.end else f"{p.begin}-{p.end}" for p in r.ports) or "-"
    )


def _free_of(total: float, used: float) -> str:
    return f"{max(0.0, total - used):g}/{total:g}"


def agent_display_state(a: operator_pb2.AgentState) -> str:
    """active, cordoned, draining, drained, disconnected (active, its stream down, before its
    timeout), recovering or unreachable; maintenance joins a state other than active. The
    master's cluster events say it in the same words (master/core/states.agent_shown)."""
    m = a.maintenance if a.HasField("maintenance") else None
    return agent_shown(
        agent_state(a),
        # A master too old to send the state says nothing of the stream either.
        a.connected or not a.state,
        m.mode if m is not None else "",
        m is not None and m.drained,
    )


def _hosts(state: operator_pb2.State) -> dict[str, str]:
    """Each agent's host as a table shows it: the hostname, with the agent's name beside it
    when several agents share the hostname (the demo's agents, a test cluster)."""
    count: dict[str, int] = {}
    for a in state.agents:
        count[a.info.hostname] = count.get(a.info.hostname, 0) + 1
    return {
        a.info.id: (
            f"{a.info.hostname}/{a.info.name or a.info.id}"
            if count[a.info.hostname] > 1
            else a.info.hostname
        )
        for a in state.agents
    }


def rows(
    kind: str, state: operator_pb2.State, *, wide: bool = False, now: float | None = None
) -> tuple[list[str], list[list[str]], list[dict[str, Any]]]:
    """Column names, table rows (``wide``: with the long columns) and JSON records (the shape
    of the master's /api/v1/state: corral.master.http.state_json) for one kind. The first columns
    are the same either way."""
    now = time.time() if now is None else now
    classes = state_json.classes_of(state)
    if kind == "agents":
        cols = ["ID", "NAME", "HOSTNAME", "ZONE", "STATE", "CPUS", "MEM", "GPUS", "PORTS"]
        cols += ["TASKS", "MEMORY", "ATTRIBUTES", "TAINTS"]
        table = [
            [
                a.info.id,
                a.info.name or "-",
                a.info.hostname,
                a.info.attributes.get("zone", "-"),
                agent_display_state(a),
                _free_of(a.info.resources.cpus, a.used.cpus),
                _free_of(a.info.resources.mem, a.used.mem),
                _free_of(a.info.resources.gpus, a.used.gpus) if a.info.resources.gpus else "-",
                ports_text(a.info.resources),
                str(a.tasks),
                _memory(a),
                ",".join(f"{k}={v}" for k, v in sorted(a.info.attributes.items())),
                ",".join(_taint(t) for t in a.info.taints),
            ]
            for a in state.agents
        ]
        if wide:
            cols += ["DISK", "OFFERED", "RESERVED", "REVOCABLE", "PRESSURE"]
            for row, a in zip(table, state.agents, strict=True):
                reserved = [f"{role}:{_res(r)}" for role, r in sorted(a.info.reservations.items())]
                row += [
                    _free_of(a.info.resources.disk, a.used.disk),
                    _res(a.offered),
                    _joined(reserved),
                    _revocable(a),
                    _pressure(a),
                ]
        records = [state_json.agent(a) for a in state.agents]
    elif kind == "frameworks":
        cols = ["ID", "NAME", "ROLE", "STATE", "SUPPRESSED", "PRIORITY", "UNMET", "USED"]
        table = [
            [
                f.info.id,
                f.info.name,
                f.info.role,
                framework_state(f),
                "yes" if f.suppressed else "no",
                # Its class's value, met or not (not its DRF level, the default's once met).
                "-"
                if framework_state(f) == "removed"
                else str(state_json.class_priority(f, classes)),
                str(sum(d.unmet for d in f.demands)) if f.demands else "-",
                _res(f.used),
            ]
            for f in state.frameworks
        ]
        if wide:
            cols += ["OFFERED", "CONSTRAINTS", "TOLERATIONS", "DEMANDS"]
            for row, f in zip(table, state.frameworks, strict=True):
                row += [
                    _res(f.offered),
                    _joined([_constraint(c) for c in f.info.offer_constraints]),
                    _joined([_toleration(t) for t in f.info.tolerations]),
                    _joined([_demand(d) for d in f.demands]),
                ]
        records = [state_json.framework(f, classes) for f in state.frameworks]
    elif kind == "tasks":
        hosts = _hosts(state)
        zones = {a.info.id: a.info.attributes.get("zone", "-") for a in state.agents}
        cols = ["ID", "FRAMEWORK", "AGENT", "HOST", "ZONE", "STATE", "REASON", "AGE"]
        cols += ["HEALTH", "RESOURCES", "QOS", "MEM USED", "PORTS", "EXIT", "MESSAGE"]
        table = [
            [
                t.info.task_id,
                t.info.framework_id,
                t.info.agent_id,
                hosts.get(t.info.agent_id, "-"),
                zones.get(t.info.agent_id, "-"),
                task_state_name(t.status.state),
                _reason_name(t.status.reason) or "-",
                age(now - t.launched_at) if t.launched_at else "-",
                _health(t.status),
                _res(t.info.resources),
                t.qos_class + (" revocable" if t.info.revocable else ""),
                f"{t.usage.mem:.0f}" if t.HasField("usage") else "",
                ports_text(t.info.resources),
                str(t.status.exit_code) if t.status.HasField("exit_code") else "",
                # The whole message only with -o wide: it is free text, often long.
                t.status.message if wide else t.status.message[:60],
            ]
            for t in state.tasks
        ]
        if wide:
            cols += ["NAME", "PRIORITY CLASS", "DEMAND", "LIMITS", "CPUS USED"]
            for row, t in zip(table, state.tasks, strict=True):
                row += [
                    t.info.name,
                    t.info.priority_class,
                    t.info.demand,
                    _res(t.info.limits) if t.info.HasField("limits") else "",
                    f"{t.usage.cpus:.2f}" if t.HasField("usage") else "",
                ]
        records = [state_json.task(t) for t in state.tasks]
    else:
        cols = ["ID", "FRAMEWORK", "AGENT", "HOSTNAME", "RESOURCES"]
        table = [
            [
                o.id,
                o.framework_id,
                o.agent_id,
                o.hostname,
                _res(o.resources) + (" (revocable)" if o.revocable else ""),
            ]
            for o in state.offers
        ]
        if wide:
            cols += ["ATTRIBUTES", "GANG"]
            for row, o in zip(table, state.offers, strict=True):
                row += [
                    ",".join(f"{k}={v}" for k, v in sorted(o.attributes.items())),
                    o.gang_id,
                ]
        records = [state_json.offer(o) for o in state.offers]
    return cols, table, records


def _health(s: common_pb2.TaskStatus) -> str:
    if not s.HasField("healthy"):
        return "-"
    return "healthy" if s.healthy else "unhealthy"


Rows = tuple[list[str], list[list[str]], list[dict[str, Any]]]  # columns, table, JSON records

# Kinds read with one operator call: the RPC, its request, the rows of its answer.
ONE_CALL: dict[str, tuple[str, Callable[[], Any], Callable[[Any], Rows]]] = {
    "services": ("GetServiceStatuses", operator_pb2.GetServiceStatusesRequest, service_rows),
    "roles": ("GetRoles", operator_pb2.GetRolesRequest, role_rows),
    "priorityclasses": (
        "GetPriorityClasses",
        operator_pb2.GetPriorityClassesRequest,
        priority_class_rows,
    ),
}


def _fetch(args: argparse.Namespace) -> tuple[list[str], list[list[str]], list[dict[str, Any]]]:
    if args.kind == "nodegroups":
        from corral.cli import nodegroups_cmd

        url = args.autoscaler or nodegroups_cmd.default_url()
        return nodegroups_cmd.rows(url, args.timeout, wide=args.output == "wide")
    if args.kind in ONE_CALL:
        rpc, request, rows_of = ONE_CALL[args.kind]
        return rows_of(call_operator(args.master, rpc, request(), args.timeout))
    # The whole list (the watch compares it with the last): its pages' rows, joined.
    cols: list[str] = []
    table: list[list[str]] = []
    records: list[dict[str, Any]] = []
    for state in pages(args.kind, args.master, args.timeout, args.chunk_size, args.limit):
        cols, page_table, page_records = rows(args.kind, state, wide=args.output == "wide")
        table += page_table
        records += page_records
    return cols or rows(args.kind, operator_pb2.State())[0], table, records


def _print_pages(args: argparse.Namespace) -> None:
    """Each page as it comes: a table's rows under one header, or a JSON array written an
    object at a time (the same text as the whole array printed at once)."""
    wide, as_json = args.output == "wide", args.output == "json"
    stream = TableStream(
        rows(args.kind, operator_pb2.State(), wide=wide)[0], empty=f"(no {args.kind})"
    )
    written = 0
    for state in pages(args.kind, args.master, args.timeout, args.chunk_size, args.limit):
        _, table, records = rows(args.kind, state, wide=wide)
        if not as_json:
            stream.add(table)
            continue
        for record in records:
            text = json.dumps(record, indent=2).replace("\n", "\n  ")
            sys.stdout.write(("[\n  " if written == 0 else ",\n  ") + text)
            written += 1
        sys.stdout.flush()
    if as_json:
        print("\n]" if written else "[]", flush=True)
    else:
        stream.close()


def run(args: argparse.Namespace) -> int:
    if args.kind not in PAGED and (args.limit or args.chunk_size != paging.DEFAULT_LIMIT):
        raise CliError(
            f"--limit and --chunk-size are for agents, frameworks, tasks and offers, not "
            f"{args.kind}",
            exit_code=2,
        )
    if args.kind in PAGED and not args.watch:
        _print_pages(args)
        return 0
    first = _fetch(args)
    cols, table, records = first
    as_json = args.output == "json"
    if as_json and args.watch:
        for record in records:  # one object per line: a stream a program can read
            print(json.dumps(record), flush=True)
    elif as_json:
        print(json.dumps(records, indent=2))
    else:
        print_table(cols, table, empty=f"(no {args.kind})")
    if args.watch:
        from corral.cli.watch import watch

        return watch(args.kind, args.master, args.timeout, lambda: _fetch(args), first, as_json)
    return 0
