"""``corral run NAME``: run a framework against a master; ``corral run --list`` lists them.

The frameworks are not listed here: ``corral.frameworks.registry`` finds them (packages under
``corral.frameworks`` with a ``cli`` module, and the ``corral.frameworks`` entry points).
"""

from __future__ import annotations

import argparse
from typing import Any

from corral.cli.common import add_master_arg, positive_float, role
from corral.cli.errors import CliError
from corral.frameworks.registry import FrameworkCommand, discover


def register(subparsers: Any) -> None:
    found = discover()
    parser = subparsers.add_parser(
        "run",
        help="run a framework (corral run --list)",
        description="Run a framework against a master. `corral run --list` lists the "
        "frameworks found (packages under corral.frameworks, and installed packages' "
        "'corral.frameworks' entry points).",
    )
    parser.add_argument(
        "--list", action="store_true", help="list the frameworks that can be run, and exit"
    )
    frameworks = parser.add_subparsers(dest="framework", metavar="FRAMEWORK")
    for command in found.values():
        sub = frameworks.add_parser(
            command.name, help=command.help, description=command.description or command.help
        )
        add_master_arg(sub)
        sub.add_argument(
            "--role", type=role, default="*", help="the framework's role (default '*')"
        )
        sub.add_argument(
            "--connect-timeout",
            type=positive_float,
            default=10.0,
            metavar="SECONDS",
            help="give up if the master cannot be reached in this time (default 10)",
        )
        command.configure(sub)
        # Its failures are headed with its own name, as argparse heads its usage errors.
        sub.set_defaults(func=_runner(command), cli_prog=sub.prog)
    parser.set_defaults(func=_listing(parser, found))


def _listing(parser: argparse.ArgumentParser, found: dict[str, FrameworkCommand]) -> Any:
    def run(args: argparse.Namespace) -> int:
        if not args.list:
            known = ", ".join(sorted(found)) or "none"
            parser.error(f"name a framework to run (known: {known}), or --list")
        width = max((len(name) for name in found), default=0)
        for name in sorted(found):
            print(f"{name:<{width}}  {found[name].help}")
        return 0

    return run


def _runner(command: FrameworkCommand) -> Any:
    def run(args: argparse.Namespace) -> int:
        # Imported here so `corral --help` does not pay for grpc channels it will not open.
        from corral.frameworks.sdk import CallError, ConnectError, FrameworkError

        try:
            return command.run(args)
        except ConnectError:
            raise CliError(
                f"cannot reach the master at {args.master} within {args.connect_timeout:g} s "
                "(is `corral master` running?)"
            ) from None
        except (CallError, FrameworkError) as err:
            raise CliError(str(err)) from None
        except ValueError as err:
            raise CliError(str(err), exit_code=2) from None

    return run
