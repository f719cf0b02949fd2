"""`corral logs TASK [--stderr] [-f] [--tail N]`: a task's stdout (or stderr, or another file of
its sandbox) read through the master from its agent (Operator.ReadTaskFile; kubectl logs, the
Mesos UI's sandbox). Works for running tasks and ended ones whose sandbox is still there; says
clearly when the sandbox is gone or the agent cannot be reached.

The bytes are written as they come, unchanged. ``-f`` follows the file until the task has ended
and everything is written (or Ctrl-C).
"""

from __future__ import annotations

import argparse
import sys

from corral.cli.common import add_master_arg, add_timeout_arg, non_negative_int
from corral.cli.operator_client import stream_leader
from corral.v1 import operator_pb2


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("logs", help="a task's stdout or stderr, read through the master")
    p.add_argument("task_id", metavar="TASK", help="the task's id (corral get tasks)")
    p.add_argument("--framework", default="", help="the task's framework (if ids are shared)")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--stderr", action="store_true", help="stderr instead of stdout")
    which.add_argument(
        "--file", default="", metavar="PATH", help="another file of the task's sandbox"
    )
    p.add_argument("-f", "--follow", action="store_true", help="keep writing what the task writes")
    p.add_argument(
        "--tail",
        type=non_negative_int,
        default=0,
        metavar="N",
        help="start with the last N lines (default: the whole file)",
    )
    add_timeout_arg(p, 10.0)
    add_master_arg(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    path = args.file or ("stderr" if args.stderr else "stdout")
    request = operator_pb2.ReadTaskFileRequest(
        task_id=args.task_id,
        framework_id=args.framework,
        path=path,
        tail_lines=args.tail,
        offset=-1 if args.tail else 0,
        follow=args.follow,
    )
    # From the leader (a list of masters, ZooKeeper), found with this stream itself: the
    # owner of a task may read its files with no other grant (docs/security.md).
    out = sys.stdout.buffer
    chunks = stream_leader(
        args.master,
        "ReadTaskFile",
        request,
        args.timeout,
        stream_timeout=None if args.follow else 600,
    )
    for chunk, _address in chunks:
        out.write(chunk.data)
        out.flush()
    return 0
