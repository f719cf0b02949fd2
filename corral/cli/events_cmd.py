"""`corral events [--reason R] [--follow] [-o text|json]`: the master's cluster events.

Without ``--follow``: what the master's bounded log holds (GetEvents), oldest first; ``-o json``
prints one JSON list. With ``--follow``: those, then each new event as it happens (the Operator
``Watch`` stream) until interrupted; ``-o json`` prints one JSON object per line. The fields are
the HTTP ``/api/v1/events`` records' (timestamp, kind, reason, object_kind, subject, message,
stimulus_id).
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from typing import Any

from corral import events as cluster_events
from corral.cli.common import add_master_arg, add_output_arg, add_timeout_arg
from corral.cli.errors import CliError
from corral.cli.operator_client import call_leader
from corral.limits import MAX_MESSAGE_BYTES
from corral.v1 import operator_pb2


def _reason(text: str) -> str:
    try:
        return cluster_events.check_reason(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("events", help="cluster events (why work is pending, agents lost, ...)")
    p.add_argument(
        "--reason",
        type=_reason,
        default=None,
        metavar="REASON",
        help="only events of this reason: " + ", ".join(cluster_events.REASONS),
    )
    p.add_argument(
        "-f", "--follow", action="store_true", help="then print new events as they happen"
    )
    add_output_arg(p)
    add_timeout_arg(p)
    add_master_arg(p)
    p.set_defaults(func=run)


def record(e: operator_pb2.ClusterEvent) -> dict[str, Any]:
    return cluster_events.record(e)


def line(e: operator_pb2.ClusterEvent) -> str:
    when = datetime.datetime.fromtimestamp(e.timestamp, tz=datetime.UTC)
    stamp = when.strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"{stamp}  {e.reason:<22} {e.object_kind}/{e.subject}  {e.message}".rstrip()


def _key(e: operator_pb2.ClusterEvent) -> tuple[float, str, str, str, str]:
    return (e.timestamp, e.stimulus_id, e.kind, e.subject, e.message)


def run(args: argparse.Namespace) -> int:
    args.reason = args.reason or ""
    got: operator_pb2.ClusterEvents
    got, leader = call_leader(
        args.master,
        "GetEvents",
        operator_pb2.GetEventsRequest(reason=args.reason),
        args.timeout,
    )
    if args.output == "json" and not args.follow:
        print(json.dumps([record(e) for e in got.events], indent=2))
        return 0
    for e in got.events:
        _show(e, args.output)
    if not args.follow:
        if not got.events:
            print("(no events" + (f" of reason {args.reason})" if args.reason else ")"))
        return 0
    seen = {_key(e) for e in got.events}
    _follow(args, leader, seen)
    return 0


def _show(e: operator_pb2.ClusterEvent, output: str) -> None:
    print(json.dumps(record(e)) if output == "json" else line(e), flush=True)


def _follow(
    args: argparse.Namespace, leader: str, seen: set[tuple[float, str, str, str, str]]
) -> None:
    import grpc

    from corral.cli.client_tls import credentials
    from corral.frameworks.sdk import tls as sdk_tls
    from corral.v1 import operator_pb2_grpc

    options = [("grpc.max_receive_message_length", MAX_MESSAGE_BYTES)]
    with sdk_tls.channel(leader, credentials(), options) as channel:
        stub = operator_pb2_grpc.OperatorStub(channel)  # type: ignore[no-untyped-call]
        try:
            for e in stub.Watch(operator_pb2.WatchRequest(reason=args.reason)):
                if _key(e) in seen:
                    continue  # already printed from the log (the two overlap at the seam)
                _show(e, args.output)
        except grpc.RpcError as exc:
            detail = exc.details() if hasattr(exc, "details") else str(exc)
            raise CliError(f"master at {leader}: {detail}") from None
        except BrokenPipeError:  # `corral events -f | head`
            sys.stderr.close()
