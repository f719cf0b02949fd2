"""The ``corral`` command: one sub-command per module in ``COMMANDS``.

Each module exposes ``register(subparsers)``, which adds its parser and sets ``func`` to a
callable taking the parsed namespace and returning an exit code. A command that runs server code
also sets ``needs_server=True`` and imports that code only inside ``func``: the base install
(SDK and client commands) must be able to build this parser. Usage errors exit 2 (argparse),
user-facing failures raise ``CliError`` and exit 1 with a one-line message; no traceback reaches
the user.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

# gRPC's C core writes a line to stderr for every failed TLS handshake (a client with the wrong
# CA, a port scanner): the command's own message says what failed. Read when grpc is first
# imported, so set before any import of it.
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")

from corral import extras
from corral.cli import client_tls
from corral.cli.errors import CliError

# Sub-command modules, in the order `corral --help` lists them.
COMMANDS: tuple[str, ...] = (
    "corral.cli.master_cmd",
    "corral.cli.agent_cmd",
    "corral.cli.run_cmd",
    "corral.cli.serving_cmd",
    "corral.cli.app_cmd",
    "corral.cli.get_cmd",
    "corral.cli.set_cmd",
    "corral.cli.demo_cmd",
    "corral.cli.explain_cmd",
    "corral.cli.events_cmd",
    "corral.cli.scenario_cmd",
    "corral.cli.bench_cmd",
    "corral.cli.loadtest_cmd",
    "corral.cli.certs_cmd",
    "corral.cli.token_cmd",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="corral", description="Corral: a two-level resource-offer cluster manager."
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "needs_server", False):
        absent = extras.missing()
        if absent:
            print(
                f"corral {args.command}: needs the '{extras.SERVER_EXTRA}' extra "
                f"({extras.install_hint()}); missing: {', '.join(absent)}",
                file=sys.stderr,
            )
            return 2
    try:
        client_tls.apply(args)
        code = args.func(args)
    except CliError as exc:
        print(f"corral {args.command}: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return _reader_gone()
    return int(code or 0)


def _reader_gone() -> int:
    """The reader of our output stopped early (`corral get tasks | head`): not our error, and
    no traceback. Standard output is pointed at /dev/null so the interpreter's flush at exit
    does not fail again; the exit status is a shell's for a process ended by SIGPIPE."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 128 + 13  # SIGPIPE


if __name__ == "__main__":
    sys.exit(main())
