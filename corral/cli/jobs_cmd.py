"""`corral jobs serve`: the job service (batch and gang jobs submitted to queues with quotas,
kept in a store, taken back after a restart; docs/jobs.md)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from corral.cli.client_tls import credentials
from corral.cli.common import (
    add_master_arg,
    add_service_leadership_args,
    host_port,
    positive_float,
    service_leadership,
    service_state_dir,
)
from corral.cli.errors import CliError

DEFAULT_LISTEN = "127.0.0.1:5091"
WEEK = 7 * 24 * 3600.0
RETIRED_ACLS = (
    "--acls: the job service no longer reads an ACL file: the master decides who may submit "
    "to which queue (the jobs.queues grant of its own --acls file, asked for each submission, "
    "so a changed file counts at once); leave --acls out (docs/jobs.md)"
)


def default_state_dir() -> Path:
    return service_state_dir("jobs")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "jobs",
        help="the job service: batch and gang jobs in queues with quotas (corral job ...)",
        description="The job service (Kueue's queues above Corral's frameworks).",
    )
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)
    s = verbs.add_parser(
        "serve",
        help="run the job service",
        description="Run the job service: jobs submitted through its HTTP API (`corral job "
        "submit`) wait in queues with nominal quotas, are admitted whole, run as frameworks, "
        "and keep running through a restart of the service. One service acts on a store at a "
        "time (--standby waits to take over).",
    )
    add_master_arg(s, zk_alias=False)
    s.add_argument(
        "--state",
        type=Path,
        default=None,
        metavar="DIR",
        help=f"where the job store and its lock live (default {default_state_dir()})",
    )
    s.add_argument(
        "--queues",
        type=Path,
        default=None,
        metavar="FILE",
        help="the queues (YAML or JSON: flavors, cluster_queues, local_queues; docs/jobs.md). "
        "Default: one queue 'default' that counts nothing",
    )
    # Gone: the master decides who may submit to which queue (RETIRED_ACLS). Kept, hidden, so
    # that an old command line is told so rather than "unrecognized arguments".
    s.add_argument("--acls", default=None, help=argparse.SUPPRESS)
    s.add_argument(
        "--role", default="*", help="the role the jobs' frameworks register in (default *)"
    )
    s.add_argument(
        "--listen",
        type=host_port,
        default=DEFAULT_LISTEN,
        metavar="HOST:PORT",
        help=f"the HTTP API's address (default {DEFAULT_LISTEN}; port 0: any free port)",
    )
    s.add_argument(
        "--failover-timeout",
        type=positive_float,
        default=WEEK,
        metavar="SECONDS",
        help="how long the master keeps the jobs' tasks while the service is away (a week)",
    )
    add_service_leadership_args(s, "jobs")
    s.add_argument(
        "--ready-file",
        type=Path,
        default=None,
        metavar="FILE",
        help='once serving, write {"http": "HOST:PORT"} here (for scripts and tests)',
    )
    s.add_argument(
        "--log-level",
        choices=("debug", "info", "warning", "error"),
        default="info",
        help="log lines on stderr from this level up (default info)",
    )
    s.set_defaults(func=run, needs_server=True)


def read_queues(path: Path) -> Any:
    """The queue file's document (JSON, or YAML); CliError (exit 2) naming the file."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as err:
        raise CliError(f"--queues {path}: cannot read it: {err}", exit_code=2) from None
    try:
        return json.loads(text)
    except ValueError:
        pass
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise CliError(
            f"--queues {path}: neither JSON nor YAML: {' '.join(str(err).split())}", 2
        ) from None


def run(args: argparse.Namespace) -> int:
    import asyncio

    from corral.frameworks import sdk
    from corral.frameworks.jobs import serve
    from corral.frameworks.jobs.queues import QueueConfig, QueueConfigError, single_queue
    from corral.frameworks.service import process
    from corral.frameworks.service.records import StoreError
    from corral.frameworks.service.store_lock import StoreLocked

    if args.acls is not None:
        raise CliError(RETIRED_ACLS, exit_code=2)
    sdk.configure_logging(args.log_level)
    credentials()  # none found: one line and exit 2, before the store is touched
    if args.queues is not None:
        try:
            config = QueueConfig.from_json(read_queues(args.queues))
        except QueueConfigError as err:
            raise CliError(f"--queues {args.queues}: {err}", exit_code=2) from None
    else:
        config = single_queue("default")
    state = args.state or default_state_dir()
    options = serve.options(state, args.listen, args.ready_file, service_leadership(args))
    settings = serve.Settings(args.master, config, state, args.role, args.failover_timeout)
    try:
        return asyncio.run(process.main(options, serve.hosting(settings)))
    except (StoreLocked, StoreError) as err:
        raise CliError(str(err)) from None
    except OSError as err:
        where = f": {err.filename}" if err.filename else ""
        raise CliError(f"{err.strerror or err}{where}") from None
