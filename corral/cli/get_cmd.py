"""`corral get agents|frameworks|tasks|offers|roles|priorityclasses`: the master's state through
the Operator API (roles through GetRoles: weight, quota, what each holds, its share and
frameworks; priority classes through GetPriorityClasses, highest value first)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from google.protobuf.json_format import MessageToDict

from corral.cli.common import add_master_arg
from corral.cli.operator_client import call_operator
from corral.resources import SCALARS
from corral.v1 import common_pb2, operator_pb2

KINDS = ("agents", "frameworks", "tasks", "offers", "roles", "priorityclasses")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "get", help="list agents, frameworks, tasks, offers, roles or priority classes"
    )
    p.add_argument("kind", choices=KINDS)
    p.add_argument("-o", "--output", choices=("table", "json"), default="table")
    p.add_argument("--timeout", type=float, default=5.0, help="seconds to wait for the master")
    add_master_arg(p)
    p.set_defaults(func=run)


def fetch_state(master: str, timeout: float) -> operator_pb2.State:
    state: operator_pb2.State = call_operator(
        master, "GetState", operator_pb2.GetStateRequest(), timeout
    )
    return state


def _res(r: common_pb2.Resources) -> str:
    parts = [f"{n}:{getattr(r, n):g}" for n in ("cpus", "mem", "disk", "gpus") if getattr(r, n)]
    return " ".join(parts) or "-"


def _state_name(value: int) -> str:
    return common_pb2.TaskState.Name(value).removeprefix("TASK_STATE_")


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
    records = [
        {
            "role": r.role,
            "weight": r.weight,
            "quota": {"guarantee": _guarantee(r.quota), "limit": _limit(r.quota)},
            "allocated": {n: getattr(r.allocated, n) for n in SCALARS},
            "offered": {n: getattr(r.offered, n) for n in SCALARS},
            "share": r.share,
            "frameworks": list(r.framework_ids),
        }
        for r in roles.roles
    ]
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
    records = [
        {
            "name": c.name,
            "value": c.value,
            "preemption_policy": c.preemption_policy,
            "description": c.description,
            "global_default": c.global_default,
        }
        for c in classes.priority_classes
    ]
    return cols, table, records


def rows(
    kind: str, state: operator_pb2.State
) -> tuple[list[str], list[list[str]], list[dict[str, Any]]]:
    """Column names, table rows and JSON records for one kind."""
    if kind == "agents":
        cols = ["ID", "HOSTNAME", "ACTIVE", "RESOURCES", "USED", "ATTRIBUTES", "TAINTS"]
        table = [
            [
                a.info.id,
                a.info.hostname,
                "yes" if a.active else "no",
                _res(a.info.resources),
                _res(a.used),
                ",".join(f"{k}={v}" for k, v in sorted(a.info.attributes.items())),
                ",".join(f"{t.key}={t.value}" for t in a.info.taints),
            ]
            for a in state.agents
        ]
        records = [MessageToDict(a, preserving_proto_field_name=True) for a in state.agents]
    elif kind == "frameworks":
        cols = ["ID", "NAME", "ROLE", "CONNECTED", "SUPPRESSED", "PRIORITY", "UNMET", "USED"]
        table = [
            [
                f.info.id,
                f.info.name,
                f.info.role,
                "yes" if f.connected else "no",
                "yes" if f.suppressed else "no",
                str(f.priority),
                str(sum(d.unmet for d in f.demands)) if f.demands else "-",
                _res(f.used),
            ]
            for f in state.frameworks
        ]
        records = [MessageToDict(f, preserving_proto_field_name=True) for f in state.frameworks]
    elif kind == "tasks":
        cols = ["ID", "FRAMEWORK", "AGENT", "STATE", "EXIT", "RESOURCES", "MESSAGE"]
        table = [
            [
                t.info.task_id,
                t.info.framework_id,
                t.info.agent_id,
                _state_name(t.status.state),
                str(t.status.exit_code) if t.status.HasField("exit_code") else "",
                _res(t.info.resources),
                t.status.message[:60],
            ]
            for t in state.tasks
        ]
        records = [
            {
                "id": t.info.task_id,
                "name": t.info.name,
                "framework_id": t.info.framework_id,
                "agent_id": t.info.agent_id,
                "state": _state_name(t.status.state),
                "exit_code": t.status.exit_code if t.status.HasField("exit_code") else None,
                "message": t.status.message,
                "resources": MessageToDict(t.info.resources),
            }
            for t in state.tasks
        ]
    else:
        cols = ["ID", "FRAMEWORK", "AGENT", "HOSTNAME", "RESOURCES"]
        table = [
            [o.id, o.framework_id, o.agent_id, o.hostname, _res(o.resources)] for o in state.offers
        ]
        records = [MessageToDict(o, preserving_proto_field_name=True) for o in state.offers]
    return cols, table, records


def run(args: argparse.Namespace) -> int:
    if args.kind == "roles":
        roles = call_operator(args.master, "GetRoles", operator_pb2.GetRolesRequest(), args.timeout)
        cols, table, records = role_rows(roles)
    elif args.kind == "priorityclasses":
        classes = call_operator(
            args.master,
            "GetPriorityClasses",
            operator_pb2.GetPriorityClassesRequest(),
            args.timeout,
        )
        cols, table, records = priority_class_rows(classes)
    else:
        cols, table, records = rows(args.kind, fetch_state(args.master, args.timeout))
    if args.output == "json":
        print(json.dumps(records, indent=2))
        return 0
    from rich.console import Console
    from rich.table import Table

    t = Table(box=None, header_style="bold")
    for c in cols:
        t.add_column(c)
    for r in table:
        t.add_row(*r)
    console = Console()
    console.print(t)
    if not table:
        console.print(f"(no {args.kind})")
    return 0
