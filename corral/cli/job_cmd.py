"""`corral job submit|get|list|describe|explain|logs|cancel|suspend|resume|history|queues|events`:
the job service's jobs and queues (docs/jobs.md), through its HTTP API.

Bad input (a file that does not parse, a job the service refuses) exits 2 with one line; an
unknown job, a refusal (403) or a service that does not answer exits 1."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from typing import Any

from corral.cli import app_client
from corral.cli.app_client import Serving, quote
from corral.cli.client_tls import add_tls_args
from corral.cli.common import add_master_arg, add_output_arg, positive_float
from corral.cli.errors import CliError
from corral.cli.table import print_table

DEFAULT_JOBS = "https://127.0.0.1:5091"


class Jobs(Serving):
    service_name = "job service"
    start_command = "corral jobs serve"
    url_hint = "--jobs URL or CORRAL_JOBS"


def default_url() -> str:
    return app_client.service_url("CORRAL_JOBS", DEFAULT_JOBS)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "job",
        help="the job service's jobs: submit, get, list, cancel, suspend, resume, history ...",
        description="Batch and gang jobs on the job service (`corral jobs serve`).",
    )
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)

    def verb(
        name: str, help: str, func: Any, job: bool = True, master: bool = False
    ) -> argparse.ArgumentParser:
        v = verbs.add_parser(name, help=help, description=help)
        if job:
            v.add_argument("name", metavar="JOB", help="the job's name")
        v.add_argument(
            "--jobs",
            default=None,
            metavar="URL",
            help=f"the job service (default $CORRAL_JOBS or {DEFAULT_JOBS}; http:// with "
            "--insecure)",
        )
        if master:  # the master's address too, and the TLS flags both connections use
            add_master_arg(v)
        else:
            add_tls_args(v)
        v.add_argument(
            "--timeout", type=positive_float, default=15.0, help="seconds to wait for an answer"
        )
        v.set_defaults(func=func)
        return v

    s = verb("submit", "submit a job from a file (JSON, or YAML)", submit, job=False)
    s.add_argument("-f", "--file", required=True, metavar="FILE", help="the job (- for stdin)")
    g = verb("get", "a job: phase, why, progress", get)
    add_output_arg(g)
    verb("describe", "a job in full: spec, tasks, why, history", describe)
    verb("explain", "why a job waits: its queue, and the master's why-pending", explain)
    lst = verb("list", "jobs in queue order", list_jobs, job=False)
    lst.add_argument("--queue", default=None, help="only this queue's jobs")
    lst.add_argument(
        "-o", "--output", choices=("table", "json"), default="table", help="a table or JSON"
    )
    verb("cancel", "end a job (its tasks are killed)", cancel)
    verb("suspend", "take a job out of its queue, keeping it (its tasks are killed)", suspend)
    verb("resume", "queue a suspended job again, in its old place", resume)
    h = verb("history", "what happened to a job", history)
    h.add_argument(
        "-o", "--output", choices=("table", "json"), default="table", help="a table or JSON"
    )
    q = verb("queues", "every queue: nominal, used, borrowed, lent, jobs", queues, job=False)
    q.add_argument(
        "-o", "--output", choices=("table", "json"), default="table", help="a table or JSON"
    )
    e = verb("events", "the newest events of the jobs you may see", events, job=False)
    e.add_argument("--limit", type=int, default=50, help="how many (default 50)")
    lg = verb(
        "logs", "a job's tasks' stdout (or stderr), read through the master", logs, master=True
    )
    lg.add_argument("--task", default=None, help="only this task")
    lg.add_argument("--stderr", action="store_true", help="stderr instead of stdout")


def _jobs(args: argparse.Namespace) -> Jobs:
    return Jobs(args.jobs or default_url(), args.timeout)


def _path(args: argparse.Namespace, suffix: str = "") -> str:
    return f"/v1/jobs/{quote(args.name)}{suffix}"


def _when(ts: float | None) -> str:
    if not ts:
        return "-"
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _request(r: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v:g}" for k, v in r.items() if v) or "nothing"


def _line(j: dict[str, Any]) -> str:
    text = f"job {j['name']}: {j['phase']}"
    if j.get("reason"):
        text += f": {j['reason']}"
    return text


# -- verbs ----------------------------------------------------------------------------------


def submit(args: argparse.Namespace) -> int:
    job = app_client.read_document(args.file, "job")
    answer = _jobs(args).call("POST", "/v1/jobs", job)
    where = f" in queue {answer['queue']}" if answer.get("queue") else ""
    print(f"job {answer['name']} submitted{where}: {answer['phase']}")
    return 0


def get(args: argparse.Namespace) -> int:
    j = _jobs(args).call("GET", _path(args))
    if args.output == "json":
        print(json.dumps(j, indent=2))
        return 0
    _print_job(j)
    return 0


def _print_job(j: dict[str, Any]) -> None:
    print(_line(j))
    print(f"  kind       {j['kind']} (owner {j['owner'] or '-'})")
    cq = f" (cluster queue {j['cluster_queue']})" if j["cluster_queue"] != j["queue"] else ""
    pos = f", position {j['position']}" if j.get("position") is not None else ""
    print(f"  queue      {j['queue']}{cq}{pos}")
    print(f"  priority   {j['priority_class'] or 'default'} ({j['priority']})")
    print(f"  request    {_request(j['request'])}")
    if j.get("flavor"):
        print(f"  flavor     {j['flavor']}")
    print(
        f"  submitted  {_when(j['submitted'])}   admitted {_when(j.get('admitted_at'))}   "
        f"ended {_when(j.get('ended_at'))}"
    )
    if j.get("progress"):
        p = j["progress"]
        print(
            "  progress   "
            + ", ".join(f"{k} {v}" for k, v in p.items() if not isinstance(v, list | dict))
        )
    if j.get("schedule"):
        print(f"  schedule   {json.dumps(j['schedule'])}; last run {_when(j.get('last_schedule'))}")
        print(f"  runs       {', '.join(j.get('runs', [])) or '-'}")


def describe(args: argparse.Namespace) -> int:
    jobs = _jobs(args)
    j = jobs.call("GET", _path(args))
    _print_job(j)
    print(f"  explain    {j['explain']}")
    if j.get("tasks"):
        print("  tasks")
        print_table(
            ["TASK", "AGENT"], [[t["task_id"], t.get("agent_id") or "-"] for t in j["tasks"]]
        )
    h = jobs.call("GET", _path(args, "/history"))["history"]
    print("  history")
    print_table(
        ["TIME (UTC)", "EVENT", "MESSAGE"],
        [[_when(e["at"]), e["kind"], e["message"]] for e in h[-20:]],
    )
    print("  spec")
    print("    " + json.dumps(j["spec"], indent=2).replace("\n", "\n    "))
    return 0


def explain(args: argparse.Namespace) -> int:
    e = _jobs(args).call("GET", _path(args, "/explain"))
    print(f"job {e['name']}: {e['explain']}")
    for line in e["why_pending"]:
        print(f"  the master: {line}")
    return 0


def list_jobs(args: argparse.Namespace) -> int:
    path = "/v1/jobs" + (f"?queue={quote(args.queue)}" if args.queue else "")
    found = _jobs(args).call("GET", path)["jobs"]
    if args.output == "json":
        print(json.dumps(found, indent=2))
        return 0
    rows = [
        [
            j["name"],
            j["queue"],
            j["kind"],
            j["phase"],
            "-" if j.get("position") is None else str(j["position"]),
            j["priority_class"] or "default",
            _request(j["request"]),
            j.get("reason", "")[:70],
        ]
        for j in found
    ]
    print_table(["JOB", "QUEUE", "KIND", "PHASE", "POS", "PRIORITY", "REQUEST", "WHY"], rows)
    return 0


def _change(args: argparse.Namespace, what: str) -> int:
    j = _jobs(args).call("POST", _path(args, f"/{what}"))
    print(_line(j))
    return 0


def cancel(args: argparse.Namespace) -> int:
    return _change(args, "cancel")


def suspend(args: argparse.Namespace) -> int:
    return _change(args, "suspend")


def resume(args: argparse.Namespace) -> int:
    return _change(args, "resume")


def history(args: argparse.Namespace) -> int:
    h = _jobs(args).call("GET", _path(args, "/history"))["history"]
    if args.output == "json":
        print(json.dumps(h, indent=2))
        return 0
    print_table(
        ["TIME (UTC)", "EVENT", "MESSAGE"], [[_when(e["at"]), e["kind"], e["message"]] for e in h]
    )
    return 0


def queues(args: argparse.Namespace) -> int:
    q = _jobs(args).call("GET", "/v1/queues")
    if args.output == "json":
        print(json.dumps(q, indent=2))
        return 0
    rows = [
        [
            r["cluster_queue"],
            r["flavor"],
            r["cohort"] or "-",
            r["strategy"],
            _request(r["nominal"]),
            _request(r["used"]),
            _request(r["borrowed"]),
            _request(r["lent"]),
            str(r["pending_jobs"]),
            str(r["admitted_jobs"]),
        ]
        for r in q["queues"]
    ]
    print_table(
        [
            "QUEUE",
            "FLAVOR",
            "COHORT",
            "STRATEGY",
            "NOMINAL",
            "USED",
            "BORROWED",
            "LENT",
            "PENDING",
            "ADMITTED",
        ],
        rows,
    )
    return 0


def events(args: argparse.Namespace) -> int:
    if not 0 < args.limit <= 1000:
        raise CliError(f"--limit: from 1 to 1000, got {args.limit}", exit_code=2)
    found = _jobs(args).call("GET", f"/v1/events?limit={args.limit}")["events"]
    print_table(
        ["TIME (UTC)", "JOB", "EVENT", "MESSAGE"],
        [[_when(e["at"]), e["job"], e["kind"], e["message"]] for e in found],
    )
    return 0


def logs(args: argparse.Namespace) -> int:
    from corral.cli import logs_cmd

    j = _jobs(args).call("GET", _path(args))
    tasks = [t["task_id"] for t in j.get("tasks", [])]
    if args.task is not None:
        tasks = [args.task]
    if not tasks:
        raise CliError(f"job {args.name} has no task to read ({j['phase']})")
    code = 0
    for task_id in tasks:
        if len(tasks) > 1:
            print(f"==> {task_id} <==", flush=True)
        ns = argparse.Namespace(
            task_id=task_id,
            framework=j.get("framework_id", ""),
            stderr=args.stderr,
            file="",
            follow=False,
            tail=0,
            timeout=args.timeout,
            master=args.master,
        )
        code = max(code, int(logs_cmd.run(ns) or 0))
    return code
