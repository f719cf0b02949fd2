"""The ``corral`` command: one sub-command per module in ``COMMANDS``.

Each module exposes ``register(subparsers)``, which adds its parser and sets ``func`` to a
callable taking the parsed namespace and returning an exit code. A command that runs server code
also sets ``needs_server=True`` and imports that code only inside ``func``: the base install
(SDK and client commands) must be able to build this parser. Usage errors exit 2 (argparse),
with the usage of the (sub-)command they were made in; user-facing failures raise ``CliError``
and exit 1 with a one-line message headed by the command's name (``cli_prog`` when a command
sets it, as ``corral run NAME`` does); no traceback reaches the user. A command that starts
processes sets ``starts_processes=True``: SIGINT, SIGTERM and SIGHUP then stop them all
(corral/stop_signals.py) and it exits 128 + the signal's number.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Sequence

# gRPC's C core writes a line to stderr for every failed TLS handshake (a client with the wrong
# CA, a port scanner): the command's own message says what failed. Read when grpc is first
# imported, so set before any import of it.
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
# gRPC's TLS endpoint without a lock per frame and with pipelined reads: on a master, agents
# and frameworks sharing two cores it cut TLS's cost in launches/s from ~15 % to ~5 % (docs/
# performance.md, "The cost of security"). Read at gRPC's start; children (the load test's
# workers, the demo's processes) inherit it; GRPC_EXPERIMENTS set by the user wins.
os.environ.setdefault(
    "GRPC_EXPERIMENTS", "tsi_frame_protector_without_locks,pipelined_read_secure_endpoint"
)

from corral import extras
from corral.cli import client_tls
from corral.cli.errors import CliError
from corral.stop_signals import Stopped, stop_on_signals

# Sub-command modules, in the order `corral --help` lists them.
COMMANDS: tuple[str, ...] = (
    "corral.cli.master_cmd",
    "corral.cli.agent_cmd",
    "corral.cli.run_cmd",
    "corral.cli.serving_cmd",
    "corral.cli.app_cmd",
    "corral.cli.jobs_cmd",
    "corral.cli.job_cmd",
    "corral.cli.autoscaler_cmd",
    "corral.cli.get_cmd",
    "corral.cli.describe_cmd",
    "corral.cli.logs_cmd",
    "corral.cli.actions_cmd",
    "corral.cli.set_cmd",
    "corral.cli.config_cmd",
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
    # Not dest="command": a sub-command's own --command flag (run batch, run gang) would
    # overwrite it, and errors were headed "corral : ..." or "corral None: ...".
    sub = parser.add_subparsers(dest="cli_command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        importlib.import_module(name).register(sub)
    _own_usage(parser)
    return parser


def _own_usage(parser: argparse.ArgumentParser) -> None:
    """Let every sub-command's parser name itself in the parsed namespace (the innermost one
    wins), so that errors argparse leaves to the top-level parser, unrecognized arguments,
    print the usage of the command they were given to: ``corral run batch --bogus`` shows
    ``corral run batch``'s usage, not ``corral``'s."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                child.set_defaults(cli_parser=child)
                _own_usage(child)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        inner: argparse.ArgumentParser = getattr(args, "cli_parser", parser)
        inner.error(f"unrecognized arguments: {' '.join(unknown)}")
    prog = getattr(args, "cli_prog", None) or f"corral {args.cli_command}"
    # A command that starts processes (a master, agents, frameworks) stops them all on SIGINT,
    # SIGTERM and SIGHUP, not only on Ctrl-C (corral/stop_signals.py).
    starts_processes = getattr(args, "starts_processes", False)
    if getattr(args, "needs_server", False):
        absent = extras.missing()
        if absent:
            print(
                f"{prog}: needs the '{extras.SERVER_EXTRA}' extra "
                f"({extras.install_hint()}); missing: {', '.join(absent)}",
                file=sys.stderr,
            )
            return 2
    try:
        if getattr(args, "master_from_context", False) and args.master is None:
            from corral.cli.contexts import default_master

            args.master = default_master()[0]
        client_tls.apply(args)
        with stop_on_signals() if starts_processes else contextlib.nullcontext():
            code = args.func(args)
    except CliError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return exc.exit_code
    except Stopped as stop:
        with contextlib.suppress(OSError):  # whoever read our output may be gone
            print(f"{prog}: stopped ({stop.name}); what it started is stopped", file=sys.stderr)
        return 128 + stop.signum
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
