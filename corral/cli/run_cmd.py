"""``corral run hello``: run an example framework against a master."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from corral.cli.common import add_master_arg
from corral.cli.errors import CliError


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text}")
    return value


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("run", help="run an example framework")
    frameworks = parser.add_subparsers(dest="framework", metavar="FRAMEWORK", required=True)
    hello = frameworks.add_parser(
        "hello",
        help="the tutorial framework: N tasks echo hello; exit 0 when all FINISHED",
        description="Launch N small `echo hello` tasks, wait until all end, print a summary. "
        "Exit 0 when every task FINISHED, 1 otherwise.",
    )
    add_master_arg(hello)
    hello.add_argument(
        "--tasks",
        type=_positive_int,
        default=5,
        metavar="N",
        help="how many tasks to launch (default 5)",
    )
    hello.add_argument("--role", default="*", help="the framework's role (default '*')")
    hello.add_argument(
        "--connect-timeout",
        type=_positive_float,
        default=10.0,
        metavar="SECONDS",
        help="give up if the master cannot be reached in this time (default 10)",
    )
    hello.set_defaults(func=run_hello)


def run_hello(args: argparse.Namespace) -> int:
    # Imported here so `corral --help` does not pay for grpc channels it will not open.
    from frameworks.examples import hello
    from frameworks.sdk import CallError, ConnectError, FrameworkError

    try:
        return asyncio.run(hello.main(args.master, args.tasks, args.role, args.connect_timeout))
    except ConnectError:
        raise CliError(
            f"cannot reach the master at {args.master} within {args.connect_timeout:g} s "
            "(is `corral master` running?)"
        ) from None
    except (CallError, FrameworkError) as err:
        raise CliError(str(err)) from None
