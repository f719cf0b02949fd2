"""``corral run hello``: run an example framework against a master."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from corral.cli.common import add_master_arg, positive_float, positive_int
from corral.cli.errors import CliError


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
        type=positive_int,
        default=5,
        metavar="N",
        help="how many tasks to launch (default 5)",
    )
    hello.add_argument("--role", default="*", help="the framework's role (default '*')")
    hello.add_argument(
        "--connect-timeout",
        type=positive_float,
        default=10.0,
        metavar="SECONDS",
        help="give up if the master cannot be reached in this time (default 10)",
    )
    hello.set_defaults(func=run_hello)


def run_hello(args: argparse.Namespace) -> int:
    # Imported here so `corral --help` does not pay for grpc channels it will not open.
    from corral.frameworks.examples import hello
    from corral.frameworks.sdk import CallError, ConnectError, FrameworkError

    try:
        return asyncio.run(hello.main(args.master, args.tasks, args.role, args.connect_timeout))
    except ConnectError:
        raise CliError(
            f"cannot reach the master at {args.master} within {args.connect_timeout:g} s "
            "(is `corral master` running?)"
        ) from None
    except (CallError, FrameworkError) as err:
        raise CliError(str(err)) from None
