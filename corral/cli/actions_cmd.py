"""Operators' actions: `corral kill TASK...`, `corral teardown FRAMEWORK`, `corral cordon |
uncordon | drain AGENT`, `corral delete agent AGENT` (the Operator API's KillTasks,
TeardownFramework, Cordon, Uncordon, Drain and DeleteAgent; docs/operations.md, "Operating
tasks and agents"). Each declares who asks (``--as``, the context's operator, else $USER); the
master records it in a cluster event.

`corral drain` waits, as kubectl drain does, while a disruption budget refuses it (saying
which) and then until the agent has no task left (``--timeout``,
0: no limit), printing what it waits for; a drain that times out exits 1 naming the tasks left
(the agent stays draining: run it again, or `corral uncordon`).
"""

from __future__ import annotations

import argparse
import math
import sys
import time

from corral.cli.client_tls import credentials
from corral.cli.common import add_master_arg, add_operator_arg, non_negative_float, positive_float
from corral.cli.contexts import operator_name
from corral.cli.errors import CliError
from corral.cli.get_cmd import fetch_state
from corral.cli.operator_client import call_operator, operator_metadata
from corral.frameworks.sdk import tls as sdk_tls
from corral.v1 import operator_pb2

POLL = 0.5  # seconds between two looks at a draining agent
SAY_EVERY = 5.0  # seconds between two lines about what a drain waits for


def _common(p: argparse.ArgumentParser, timeout_flag: bool = True) -> None:
    if timeout_flag:
        p.add_argument(
            "--timeout",
            dest="call_timeout",
            type=positive_float,
            default=5.0,
            metavar="SECONDS",
            help="seconds to wait for the master",
        )
    else:
        p.set_defaults(call_timeout=10.0)
    add_operator_arg(p)
    add_master_arg(p)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("kill", help="kill tasks (each with its kill grace period)")
    p.add_argument("task_ids", nargs="+", metavar="TASK", help="task ids (corral get tasks)")
    p.add_argument("--framework", default="", help="the tasks' framework (if ids are shared)")
    p.add_argument(
        "--grace",
        type=non_negative_float,
        default=None,
        metavar="S",
        help="seconds between SIGTERM and SIGKILL (default: each task's own; 0: at once)",
    )
    _common(p)
    p.set_defaults(func=kill)

    p = sub.add_parser("teardown", help="remove a framework: its tasks killed (Mesos /teardown)")
    p.add_argument("framework_id", metavar="FRAMEWORK", help="the framework's id")
    _common(p)
    p.set_defaults(func=teardown)

    for verb, what in (
        ("cordon", "offer an agent to nobody (its tasks run on)"),
        ("uncordon", "offer a cordoned or draining agent again"),
        ("drain", "cordon an agent and kill its tasks, so frameworks place them elsewhere"),
    ):
        p = sub.add_parser(verb, help=what)
        p.add_argument("agent_id", metavar="AGENT", help="the agent's id (corral get agents)")
        if verb == "drain":
            p.add_argument(
                "--grace",
                type=non_negative_float,
                default=None,
                metavar="S",
                help="seconds between SIGTERM and SIGKILL (default: each task's own)",
            )
            p.add_argument(
                "--timeout",
                dest="wait_seconds",
                type=non_negative_float,
                default=0.0,
                metavar="S",
                help="seconds to wait for its tasks to end before giving up (exit 1; the "
                "agent stays draining); default 0: as long as it takes, as kubectl drain",
            )
        _common(p, timeout_flag=verb != "drain")
        p.set_defaults(func=maintain, verb=verb)

    p = sub.add_parser("delete", help="forget an agent that is gone (corral delete agent ID)")
    p.add_argument("kind", choices=("agent",), help="what to delete")
    p.add_argument("object_id", metavar="ID", help="the agent's id")
    _common(p)
    p.set_defaults(func=delete)


def _call(args: argparse.Namespace, method: str, request: object) -> object:
    if args.operator and not isinstance(credentials(), sdk_tls.Insecure):
        # Said, not silently dropped: the event will name someone else than --as did.
        print(
            f"corral: --as {args.operator} is ignored: over TLS the master records the "
            "principal of your certificate (or token)",
            file=sys.stderr,
        )
    metadata = operator_metadata(operator_name(args.operator))
    return call_operator(args.master, method, request, args.call_timeout, metadata)


def kill(args: argparse.Namespace) -> int:
    request = operator_pb2.KillTasksRequest(task_ids=args.task_ids, framework_id=args.framework)
    if args.grace is not None:
        request.grace_seconds = args.grace
    answer = _call(args, "KillTasks", request)
    assert isinstance(answer, operator_pb2.KillTasksResponse)
    for t in answer.tasks:
        print(f"task {t.task_id} (framework {t.framework_id}, agent {t.agent_id}): {t.outcome}")
    return 0


def teardown(args: argparse.Namespace) -> int:
    request = operator_pb2.TeardownFrameworkRequest(framework_id=args.framework_id)
    answer = _call(args, "TeardownFramework", request)
    assert isinstance(answer, operator_pb2.TeardownFrameworkResponse)
    print(f"framework {args.framework_id} torn down: {answer.tasks_killed} tasks killed")
    return 0


def delete(args: argparse.Namespace) -> int:
    answer = _call(args, "DeleteAgent", operator_pb2.DeleteAgentRequest(agent_id=args.object_id))
    assert isinstance(answer, operator_pb2.DeleteAgentResponse)
    print(f"agent {args.object_id} deleted: {answer.tasks_gone} tasks it had reported GONE")
    return 0


def maintain(args: argparse.Namespace) -> int:
    request: object
    if args.verb == "cordon":
        request, method = operator_pb2.CordonRequest(agent_id=args.agent_id), "Cordon"
    elif args.verb == "uncordon":
        request, method = operator_pb2.UncordonRequest(agent_id=args.agent_id), "Uncordon"
    else:
        drain = operator_pb2.DrainRequest(agent_id=args.agent_id)
        if args.grace is not None:
            drain.grace_seconds = args.grace
        request, method = drain, "Drain"
    answer = _call_within_budgets(args, request) if args.verb == "drain" else None
    if answer is None:
        answer = _call(args, method, request)
    assert isinstance(answer, operator_pb2.MaintenanceResponse)
    if args.verb == "uncordon":
        print(f"agent {args.agent_id} uncordoned: offered again")
        return 0
    if args.verb == "cordon":
        print(f"agent {args.agent_id} cordoned: offered to nobody; its tasks run on")
        return 0
    killed = list(answer.tasks_killed)
    print(f"agent {args.agent_id} draining: {len(killed)} tasks being killed")
    return _wait_drained(args)


def _call_within_budgets(args: argparse.Namespace, request: object) -> object:
    """Drain; while a disruption budget refuses it, say which and try again, as kubectl drain
    waits on a PodDisruptionBudget, until ``--timeout`` (exit 1, the agent left as it was)."""
    started = time.monotonic()
    said = -math.inf
    while True:
        try:
            return _call(args, "Drain", request)
        except CliError as exc:
            if "disruption budget" not in str(exc):
                raise
            waited = time.monotonic() - started
            if args.wait_seconds and waited >= args.wait_seconds:
                raise CliError(
                    f"agent {args.agent_id} not drained after {waited:.0f}s: {exc}"
                ) from None
            if time.monotonic() - said >= SAY_EVERY:
                said = time.monotonic()
                print(f"waiting: {str(exc).split(': ', 1)[-1]}", flush=True)
            time.sleep(POLL)


def _wait_drained(args: argparse.Namespace) -> int:
    """Until no live task is left on the agent, or ``--wait`` seconds."""
    started = time.monotonic()
    said = started
    while True:
        # Its agent's part of the state only: a poll of the whole state costs the master the
        # cluster (master/state_scope.py).
        scope = operator_pb2.GetStateRequest(agent=args.agent_id)
        state = fetch_state(args.master, args.call_timeout, scope)
        left = sorted(
            t.info.task_id
            for t in state.tasks
            if t.info.agent_id == args.agent_id and not _ended(t.status.state)
        )
        if not left:
            print(f"agent {args.agent_id} drained")
            return 0
        waited = time.monotonic() - started
        if args.wait_seconds and waited >= args.wait_seconds:
            raise CliError(
                f"agent {args.agent_id} still has {len(left)} tasks after {waited:.0f}s: "
                f"{', '.join(left[:10])}{', ...' if len(left) > 10 else ''} (it stays draining)"
            )
        if time.monotonic() - said >= SAY_EVERY:
            said = time.monotonic()
            print(f"waiting for {len(left)} tasks: {', '.join(left[:5])}", flush=True)
        time.sleep(POLL)


def _ended(state: int) -> bool:
    from corral.frameworks.sdk.states import TERMINAL_STATES

    return state in TERMINAL_STATES
