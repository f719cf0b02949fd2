"""`corral describe agent|task|framework|role ID`: everything the master knows of one object and
its recent cluster events (kubectl describe). Made from GetState scoped to the object (not the
whole cluster's state), GetEvents and, for a framework, Explain; ``-o json`` gives ``{"kind",
"object", "events"}`` with the object in the shape of /api/v1/state
(corral.master.http.state_json) and the events in /api/v1/events'.
"""

from __future__ import annotations

import argparse
import datetime
import json
import time
from collections import Counter
from typing import Any

from corral.cli.common import add_master_arg, add_output_arg, add_timeout_arg
from corral.cli.errors import CliError
from corral.cli.get_cmd import (
    age,
    agent_display_state,
    fetch_state,
    ports_text,
)
from corral.cli.operator_client import call_operator
from corral.events import record
from corral.master.http import state_json
from corral.v1 import operator_pb2

KINDS = ("agent", "task", "framework", "role", "nodegroup")
EVENTS_SHOWN = 20


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "describe", help="one agent, task, framework, role or node group, and its events"
    )
    p.add_argument("kind", choices=KINDS, help="what to describe")
    p.add_argument(
        "object_id",
        metavar="ID",
        help="its id (an agent: or its name or hostname, as `corral get agents` prints; a role: "
        "its name)",
    )
    p.add_argument("--framework", default="", help="a task's framework (if ids are shared)")
    p.add_argument(
        "--autoscaler",
        default=None,
        metavar="URL",
        help="nodegroup: the autoscaler's API (default $CORRAL_AUTOSCALER, else "
        "https://127.0.0.1:5092)",
    )
    add_output_arg(p)
    add_timeout_arg(p)
    add_master_arg(p)
    p.set_defaults(func=run)


def _when(t: float, now: float) -> str:
    if not t:
        return "-"
    stamp = datetime.datetime.fromtimestamp(t, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"{stamp} ({age(now - t)} ago)"


def _res(r: dict[str, Any]) -> str:
    parts = [f"{n}:{r[n]:g}" for n in ("cpus", "mem", "disk", "gpus") if r.get(n)]
    if r.get("ports"):
        parts.append("ports:" + ",".join(f"{b}-{e}" if b != e else f"{b}" for b, e in r["ports"]))
    return " ".join(parts) or "-"


def _events(master: str, timeout: float, match: Any, subject: str = "") -> list[dict[str, Any]]:
    request = operator_pb2.GetEventsRequest(subject=subject)
    got = call_operator(master, "GetEvents", request, timeout)
    return [record(e) for e in got.events if match(e.subject)]


def find_agent(state: operator_pb2.State, given: str) -> operator_pb2.AgentState:
    """The agent ``given`` names, as kubectl finds a node by its name: its id, else its name
    (the NAME column of `corral get agents`) or its hostname, or ``HOST/NAME`` (the HOST column
    of `corral get tasks`). CliError when none is, and when several are (exit 2, naming their
    ids: several agents may share a hostname or a name)."""
    for a in state.agents:
        if a.info.id == given:
            return a
    named = [
        a
        for a in state.agents
        if given in (a.info.name, a.info.hostname, f"{a.info.hostname}/{a.info.name}")
    ]
    if len(named) == 1:
        return named[0]
    if named:
        ids = ", ".join(sorted(a.info.id for a in named))
        raise CliError(
            f"{len(named)} agents are named {given!r} (by name or hostname): {ids}; give the id",
            exit_code=2,
        )
    raise CliError(f"no agent {given!r} by id, name or hostname (corral get agents lists them)")


def _find(args: argparse.Namespace, state: operator_pb2.State) -> tuple[Any, dict[str, Any]]:
    """The object's message and its JSON record; CliError when there is no such object."""
    classes = state_json.classes_of(state)
    oid = args.object_id
    if args.kind == "agent":
        a = find_agent(state, oid)
        return a, state_json.agent(a)
    if args.kind == "framework":
        for f in state.frameworks:
            if f.info.id == oid:
                return f, state_json.framework(f, classes)
        raise CliError(f"no framework {oid!r} (corral get frameworks lists them)")
    if args.kind == "task":
        found = [
            t
            for t in state.tasks
            if t.info.task_id == oid
            and (not args.framework or t.info.framework_id == args.framework)
        ]
        if not found:
            raise CliError(f"no task {oid!r} (corral get tasks lists them)")
        frameworks = {t.info.framework_id for t in found}
        if len(frameworks) > 1:
            raise CliError(
                f"task id {oid!r} is used by frameworks {', '.join(sorted(frameworks))}: "
                "name one with --framework",
                exit_code=2,
            )
        return found[0], state_json.task(found[0])
    for r in state.roles:
        if r.role == oid:
            return r, state_json.role(r)
    raise CliError(f"no role {oid!r} (corral get roles lists them)")


def scope_of(args: argparse.Namespace) -> operator_pb2.GetStateRequest:
    """The state to ask for: the object and what refers to it, not the whole cluster's
    (master/state_scope.py; a master that predates scopes answers with the whole state, and
    ``_find`` looks the object up in it all the same). An empty ID is a usage error (exit 2)."""
    oid = args.object_id
    if not oid:
        raise CliError(f"describe {args.kind}: the ID is empty", exit_code=2)
    if args.kind == "agent":
        return operator_pb2.GetStateRequest(agent=oid)
    if args.kind == "framework":
        return operator_pb2.GetStateRequest(framework_id=oid)
    if args.kind == "task":
        return operator_pb2.GetStateRequest(
            task=operator_pb2.TaskRef(task_id=oid, framework_id=args.framework)
        )
    return operator_pb2.GetStateRequest(role=oid)


def run(args: argparse.Namespace) -> int:
    if args.kind == "nodegroup":
        from corral.cli import nodegroups_cmd

        return nodegroups_cmd.describe(args)
    state = fetch_state(args.master, args.timeout, scope_of(args))
    msg, record = _find(args, state)
    # An agent may be given by name or hostname; its events are about its id.
    oid = record["id"] if args.kind == "agent" else args.object_id
    if args.kind == "framework":
        events = _events(args.master, args.timeout, lambda s: s == oid or s.startswith(oid + "/"))
    elif args.kind == "task" and record["demand"]:
        # Its own events, and its demand's (Scheduled, FailedScheduling, ...).
        demand = f"{record['framework_id']}/{record['demand']}"
        events = _events(args.master, args.timeout, lambda s: s in (oid, demand))
    else:
        events = _events(args.master, args.timeout, lambda s: s == oid, subject=oid)
    events = events[-EVENTS_SHOWN:]
    explanation = None
    if args.kind == "framework" and record["state"] != "removed":
        explanation = call_operator(
            args.master, "Explain", operator_pb2.ExplainRequest(framework_id=oid), args.timeout
        )
    if args.output == "json":
        print(json.dumps({"kind": args.kind, "object": record, "events": events}, indent=2))
        return 0
    now = time.time()
    lines = _describe(args.kind, msg, record, state, now, explanation)
    width = max(len(k) for k, _ in lines if k) + 2
    for key, value in lines:
        print(f"{key + ':':<{width}}{value}" if key else value)
    print("Events:")
    if not events:
        print("  <none>")
    for e in events:
        print(f"  {age(now - e['timestamp']):>5} ago  {e['reason']:<20} {e['message']}")
    return 0


def _describe(
    kind: str,
    msg: Any,
    r: dict[str, Any],
    state: operator_pb2.State,
    now: float,
    explanation: operator_pb2.Explanation | None,
) -> list[tuple[str, str]]:
    if kind == "agent":
        return _agent(msg, r, state, now)
    if kind == "task":
        return _task(r, state, now)
    if kind == "framework":
        return _framework(r, state, explanation, now)
    return [
        ("Role", r["role"]),
        ("Weight", f"{r['weight']:g}"),
        ("Guarantee", _res(r["quota"]["guarantee"])),
        ("Limit", _res(r["quota"]["limit"])),
        ("Allocated", _res(r["allocated"])),
        ("Offered", _res(r["offered"])),
        ("Share", f"{r['share']:.3f}"),
        ("Frameworks", ", ".join(r["frameworks"]) or "-"),
    ]


def _agent(
    a: operator_pb2.AgentState, r: dict[str, Any], state: operator_pb2.State, now: float
) -> list[tuple[str, str]]:
    m = r["maintenance"]
    total, used = r["resources"], r["used"]
    free = {n: max(0.0, total[n] - used[n]) for n in ("cpus", "mem", "disk", "gpus")}
    tasks = [t for t in state.tasks if t.info.agent_id == r["id"]]
    live = [t for t in tasks if state_json.task_state_name(t.status.state) in _LIVE]
    out = [
        ("Name", r["id"]),
        ("Agent name", r["name"] or "-"),
        ("Hostname", r["hostname"]),
        ("State", agent_display_state(a)),
        ("Connected", "yes" if r["connected"] else "no"),
        (
            "Maintenance",
            "-"
            if m is None
            else f"{m['mode']} since {_when(m['since'], now)} by {m['requested_by']}"
            + ("" if m["grace_seconds"] is None else f", grace {m['grace_seconds']:g}s")
            + (", drained" if m["drained"] else ""),
        ),
        ("Attributes", ", ".join(f"{k}={v}" for k, v in r["attributes"].items()) or "-"),
        ("Taints", ", ".join(r["taints"]) or "-"),
        ("Resources", _res(total)),
        ("Used", _res(used)),
        ("Offered", _res(r["offered"])),
        ("Free", _res(free)),
        ("Ports", ports_text(a.info.resources)),
        ("Reservations", ", ".join(f"{k}: {_res(v)}" for k, v in r["reservations"].items()) or "-"),
        ("Registered", _when(r["registered_at"], now)),
        ("Last seen", _when(r["last_seen"], now)),
        ("Heartbeat", f"every {r['heartbeat_interval']:g}s"),
        ("Tasks", f"{len(live)} live, {len(tasks) - len(live)} ended and kept"),
    ]
    out += [
        (
            "",
            f"  {t.info.task_id}  {t.info.framework_id}  "
            f"{state_json.task_state_name(t.status.state)}",
        )
        for t in live[:20]
    ]
    return out


_LIVE = {"STAGING", "STARTING", "RUNNING", "KILLING", "UNREACHABLE"}


def _task(r: dict[str, Any], state: operator_pb2.State, now: float) -> list[tuple[str, str]]:
    agent = next((a for a in state.agents if a.info.id == r["agent_id"]), None)
    where = "-"
    if agent is not None:
        zone = agent.info.attributes.get("zone")
        where = f"{r['agent_id']} ({agent.info.hostname}{', zone ' + zone if zone else ''})"
    return [
        ("Name", r["id"]),
        ("Task name", r["name"] or "-"),
        ("Framework", r["framework_id"]),
        ("Agent", where),
        ("State", r["state"]),
        ("Reason", "-" if r["reason"] == "UNSPECIFIED" else r["reason"]),
        ("Message", r["message"] or "-"),
        ("Exit code", "-" if r["exit_code"] is None else str(r["exit_code"])),
        ("Health", "-" if r["healthy"] is None else ("healthy" if r["healthy"] else "unhealthy")),
        ("Resources", _res(r["resources"])),
        ("Image", r["image"] or "- (a process)"),
        ("Container", r["container_id"] or "-"),
        ("Priority class", r["priority_class"] or "(the default)"),
        ("Demand", r["demand"] or "-"),
        ("Launched", _when(r["launched_at"], now)),
        ("Updated", _when(r["updated_at"], now)),
        ("Logs", f"corral logs {r['id']} --framework {r['framework_id']}"),
    ]


def _framework(
    r: dict[str, Any],
    state: operator_pb2.State,
    explanation: operator_pb2.Explanation | None,
    now: float,
) -> list[tuple[str, str]]:
    states = Counter(
        state_json.task_state_name(t.status.state)
        for t in state.tasks
        if t.info.framework_id == r["id"]
    )
    out = [
        ("Name", r["id"]),
        ("Framework name", r["name"]),
        ("Role", r["role"]),
        ("Principal", r["principal"] or "-"),
        ("State", r["state"] + (", suppressed" if r["suppressed"] else "")),
        ("Priority", "-" if r["priority"] is None else str(r["priority"])),
        ("Registered", _when(r["registered_at"], now)),
        ("Constraints", ", ".join(r["offer_constraints"]) or "-"),
        ("Tolerations", ", ".join(r["tolerations"]) or "-"),
        ("Used", _res(r["used"])),
        ("Offers", str(r["offers"])),
        ("Unacknowledged", str(r["pending_updates"])),
        ("Tasks", ", ".join(f"{n} {s}" for s, n in sorted(states.items())) or "-"),
        ("Demands", "-" if not r["demands"] else ""),
    ]
    for d in r["demands"]:
        gang = f", gang of at least {d['min_member']}" if d["min_member"] else ""
        out.append(
            (
                "",
                f"  {d['name']}: {d['tasks']}/{d['count']} of {_res(d['resources'])}, "
                f"{d['priority_class']} ({d['priority']}){gang}, {d['unmet']} unmet",
            )
        )
    if explanation is not None:
        reasons = sorted(explanation.reasons.items(), key=lambda kv: -kv[1])
        out.append(("Held back by", "-" if not reasons else ""))
        out += [("", f"  {reason}: {n}") for reason, n in reasons]
        for d in json.loads(explanation.pending_demands_json or "[]"):
            out.append(("", f"  demand {d['name']}: {d['summary']}"))
    return out
