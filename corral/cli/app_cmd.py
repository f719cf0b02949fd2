"""`corral app apply|get|list|delete|scale|restart|rollback|history|status|endpoints`: the
serving service's apps (docs/frameworks.md, "The serving service"), through its HTTP API.

Bad input (a file that does not parse, a field the service refuses) exits 2 with one line;
an unknown app or a service that does not answer exits 1."""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from corral.cli import app_client
from corral.cli.app_client import Serving, quote
from corral.cli.client_tls import add_tls_args
from corral.cli.common import non_negative_int, positive_float, positive_int
from corral.cli.errors import CliError
from corral.cli.table import print_table

STATUS_POLL_SECONDS = 1.0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "app",
        help="the serving service's apps: apply, get, list, scale, roll back, endpoints ...",
        description="Manage long-running apps on the serving service (`corral serving serve`).",
    )
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)

    def verb(name: str, help: str, func: Any, app: bool = True) -> argparse.ArgumentParser:
        v = verbs.add_parser(name, help=help, description=help)
        if app:
            v.add_argument("id", metavar="APP", help="the app's id")
        v.add_argument(
            "--serving",
            default=None,
            metavar="URL",
            help=f"the serving service (default $CORRAL_SERVING or {app_client.DEFAULT_SERVING};"
            " http:// with --insecure)",
        )
        add_tls_args(v)
        v.add_argument(
            "--timeout", type=positive_float, default=15.0, help="seconds to wait for an answer"
        )
        v.set_defaults(func=func)
        return v

    a = verb("apply", "create or change an app from a file (JSON, or YAML)", apply, app=False)
    a.add_argument("-f", "--file", required=True, metavar="FILE", help="the app (- for stdin)")
    g = verb("get", "an app: its definition, deployment and instances", get)
    g.add_argument("-o", "--output", choices=("text", "json"), default="text", help="text or JSON")
    lst = verb("list", "every app with its instances and deployment", list_apps, app=False)
    lst.add_argument(
        "-o", "--output", choices=("table", "json"), default="table", help="a table or JSON"
    )
    verb("delete", "kill an app's instances and forget it", delete)
    s = verb("scale", "set how many instances an app runs", scale)
    s.add_argument("instances", type=non_negative_int, metavar="N", help="how many")
    verb("restart", "replace every instance by a rolling restart", restart)
    r = verb("rollback", "roll back to an earlier revision (default: the previous)", rollback)
    r.add_argument(
        "--to-revision", type=positive_int, metavar="N", default=None, help="the revision's app"
    )
    h = verb("history", "an app's revisions", history)
    h.add_argument(
        "-o", "--output", choices=("table", "json"), default="table", help="a table or JSON"
    )
    st = verb("status", "the deployment's progress (and why instances wait)", status)
    st.add_argument(
        "--watch",
        action="store_true",
        help="follow it until it ends: exit 0 when it succeeds, 1 when it fails",
    )
    st.add_argument(
        "-o", "--output", choices=("text", "json"), default="text", help="text or JSON lines"
    )
    e = verb("endpoints", "the ready instances' host:port, for clients and proxies", endpoints)
    e.add_argument(
        "-o",
        "--output",
        choices=("text", "json", "nginx", "haproxy"),
        default="text",
        help="HOST:PORT lines, JSON, an nginx upstream block or an HAProxy backend",
    )
    e.add_argument("--port-index", type=non_negative_int, default=0, help="which port (default 0)")
    e.add_argument("--watch", action="store_true", help="print them again after every change")
    e.add_argument(
        "--write",
        type=Path,
        metavar="FILE",
        help="write the output to FILE (replaced whole) instead of standard output",
    )
    e.add_argument(
        "--then",
        metavar="COMMAND",
        help="after each --write, run COMMAND with /bin/sh (e.g. 'nginx -s reload')",
    )


def _serving(args: argparse.Namespace) -> Serving:
    return Serving(args.serving or app_client.default_url(), args.timeout)


def _path(args: argparse.Namespace, suffix: str = "") -> str:
    return f"/v1/apps/{quote(args.id)}{suffix}"


def _when(ts: float | None) -> str:
    if not ts:
        return "-"
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _deployment_line(d: dict[str, Any]) -> str:
    text = f"revision {d['revision']} {d['state']}"
    return text + (f": {d['reason']}" if d.get("reason") else "")


# -- verbs ----------------------------------------------------------------------------------


def apply(args: argparse.Namespace) -> int:
    app = app_client.read_app(args.file)
    answer = _serving(args).call("PUT", f"/v1/apps/{quote(app['id'])}", app)
    print(f"app {answer['app']}: revision {answer['revision']} ({answer['change']})")
    return 0


def get(args: argparse.Namespace) -> int:
    a = _serving(args).call("GET", _path(args))
    if args.output == "json":
        print(json.dumps(a, indent=2))
        return 0
    print(f"app {a['id']}: revision {a['revision']}, version {a['version']}")
    connected = "connected" if a["connected"] else "not connected"
    print(f"  framework  {a['framework_id'] or '-'} ({connected})")
    print(
        f"  instances  {a['wanted']} wanted, {a['running']} running, {a['healthy']} healthy, "
        f"{a['ready']} ready, {a['pending']} pending"
    )
    print(f"  deployment {_deployment_line(a['deployment'])}")
    print(f"  command    {a['app']['command']}")
    rows = [
        [
            i["task_id"],
            i["host"],
            ",".join(map(str, i["ports"])) or "-",
            i["version"],
            i["state"],
            {True: "yes", False: "no", None: "-"}[i["healthy"]],
            "yes" if i["ready"] else "no",
            i["killing"] or "",
        ]
        for i in a["instances"]
    ]
    print_table(["TASK", "HOST", "PORTS", "VERSION", "STATE", "HEALTHY", "READY", "KILLING"], rows)
    return 0


def list_apps(args: argparse.Namespace) -> int:
    apps = _serving(args).call("GET", "/v1/apps")["apps"]
    if args.output == "json":
        print(json.dumps(apps, indent=2))
        return 0
    rows = [
        [
            a["id"],
            a.get("owner") or "-",
            str(a["revision"]),
            f"{a['ready']}/{a['wanted']}",
            str(a["running"]),
            str(a["pending"]),
            a["deployment"]["state"] + (" (deleting)" if a["deleting"] else ""),
        ]
        for a in apps
    ]
    print_table(
        ["ID", "OWNER", "REVISION", "READY", "RUNNING", "PENDING", "DEPLOYMENT"],
        rows,
        empty="no apps",
    )
    return 0


def delete(args: argparse.Namespace) -> int:
    answer = _serving(args).call("DELETE", _path(args))
    if "deleted" in answer:
        print(f"app {args.id} deleted")
    else:
        print(f"app {args.id} is being deleted: {answer['reason']}")
    return 0


def scale(args: argparse.Namespace) -> int:
    answer = _serving(args).call("PUT", _path(args, "/scale"), {"instances": args.instances})
    print(f"app {args.id}: revision {answer['revision']} ({answer['change']})")
    return 0


def restart(args: argparse.Namespace) -> int:
    answer = _serving(args).call("POST", _path(args, "/restart"))
    print(f"app {args.id}: revision {answer['revision']} ({answer['change']})")
    return 0


def rollback(args: argparse.Namespace) -> int:
    body = {} if args.to_revision is None else {"revision": args.to_revision}
    answer = _serving(args).call("POST", _path(args, "/rollback"), body)
    print(f"app {args.id}: revision {answer['revision']} ({answer['change']})")
    return 0


def history(args: argparse.Namespace) -> int:
    revisions = _serving(args).call("GET", _path(args, "/versions"))["revisions"]
    if args.output == "json":
        print(json.dumps(revisions, indent=2))
        return 0
    rows = [
        [str(r["revision"]), _when(r["created_at"]), r["version"], str(r["instances"]), r["change"]]
        for r in revisions
    ]
    print_table(["REVISION", "CREATED (UTC)", "VERSION", "INSTANCES", "CHANGE"], rows)
    return 0


def status(args: argparse.Namespace) -> int:
    serving = _serving(args)
    last = ""
    while True:
        s = serving.call("GET", _path(args, "/status"))
        line = (
            json.dumps(s)
            if args.output == "json"
            else (
                f"app {s['app']}: {_deployment_line(s)}; {s['updated']} of {s['wanted']} updated "
                f"and ready, {s['old']} old, {s['pending']} pending"
                + (f"; failures {s['failures']}" if s["failures"] else "")
                + "".join(f"\n  why pending: {w}" for w in s["why_pending"])
            )
        )
        if line != last:
            print(line, flush=True)
            last = line
        if not args.watch:
            return 0
        if s["state"] != "running":
            return 0 if s["state"] == "succeeded" else 1
        time.sleep(STATUS_POLL_SECONDS)


def endpoints(args: argparse.Namespace) -> int:
    if args.then and not args.write:
        raise CliError("--then runs after each --write: give --write FILE too", exit_code=2)
    serving = _serving(args)
    if not args.watch:
        _emit(args, serving.call("GET", _path(args, "/endpoints"))["endpoints"])
        return 0
    for update in serving.lines(_path(args, "/endpoints?watch=true")):
        if update.get("deleted"):
            raise CliError(f"app {args.id} was deleted")
        _emit(args, update["endpoints"])
    return 0


def _emit(args: argparse.Namespace, found: list[dict[str, Any]]) -> None:
    if args.output == "json":
        text = json.dumps({"app": args.id, "endpoints": found}) + "\n"
    elif args.output == "nginx":
        text = app_client.nginx(args.id, found, args.port_index)
    elif args.output == "haproxy":
        text = app_client.haproxy(args.id, found, args.port_index)
    else:
        pairs = app_client.addresses(found, args.port_index)
        text = "".join(f"{address}  {task}\n" for task, address in pairs)
        if args.watch:
            text = f"# {len(pairs)} ready\n" + text
    if args.write is None:
        print(text, end="", flush=True)
        return
    tmp = args.write.with_name(args.write.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(args.write)
    if args.then:
        done = subprocess.run(args.then, shell=True, check=False)
        if done.returncode != 0:
            print(f"corral app: {args.then!r} exited {done.returncode}", flush=True)
