"""`corral autoscaler --config FILE`: the cluster autoscaler (docs/autoscaler.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

from corral.cli.client_tls import credentials
from corral.cli.common import (
    add_master_arg,
    add_service_leadership_args,
    host_port,
    service_leadership,
    service_state_dir,
)
from corral.cli.errors import CliError

DEFAULT_LISTEN = "127.0.0.1:5092"


def default_state_dir() -> Path:
    return service_state_dir("autoscaler")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "autoscaler",
        help="the cluster autoscaler: node groups grown and shrunk by the master's what-if",
        description="Run the cluster autoscaler (Kubernetes' Cluster Autoscaler, for Corral): "
        "node groups grow when pending demands could go on a new agent of their template, as "
        "the master's own placement rules answer (a gang by all its members or not at all), "
        "and shrink when an agent's tasks fit elsewhere. One autoscaler acts on a state "
        "directory at a time.",
    )
    add_master_arg(p, zk_alias=False)
    p.add_argument(
        "--config",
        type=Path,
        required=True,
        metavar="FILE",
        help="the options and node groups (YAML or JSON; docs/autoscaler.md)",
    )
    p.add_argument(
        "--state",
        type=Path,
        default=None,
        metavar="DIR",
        help=f"where its records, its lock and its nodes' work dirs live (default "
        f"{default_state_dir()})",
    )
    p.add_argument(
        "--listen",
        type=host_port,
        default=DEFAULT_LISTEN,
        metavar="HOST:PORT",
        help=f"the HTTP API's address (default {DEFAULT_LISTEN}; port 0: any free port)",
    )
    p.add_argument(
        "--ready-file",
        type=Path,
        default=None,
        metavar="FILE",
        help='once serving, write {"http": "HOST:PORT", ...} here (for scripts and tests)',
    )
    add_service_leadership_args(p, "node records")
    p.add_argument("--seed", type=int, default=0, help="the random expander's seed (default 0)")
    p.add_argument(
        "--log-level",
        choices=("debug", "info", "warning", "error"),
        default="info",
        help="log lines on stderr from this level up (default info)",
    )
    p.set_defaults(func=run, needs_server=True)


def run(args: argparse.Namespace) -> int:
    import asyncio

    from corral.autoscaler import serve
    from corral.autoscaler.config import ConfigError, read
    from corral.frameworks import sdk
    from corral.frameworks.service import process
    from corral.frameworks.service.records import StoreError
    from corral.frameworks.service.store_lock import StoreLocked

    try:
        config = read(args.config)
    except ConfigError as err:
        raise CliError(f"--config {args.config}: {err}", exit_code=2) from None
    sdk.configure_logging(args.log_level)
    credentials()  # none found: one line and exit 2, before the store is touched
    state = args.state or default_state_dir()
    options = serve.options(state, args.listen, args.ready_file, service_leadership(args))
    settings = serve.Settings(args.master, config, state, args.seed)
    try:
        return asyncio.run(process.main(options, serve.hosting(settings)))
    except (StoreLocked, StoreError) as err:
        raise CliError(str(err)) from None
    except OSError as err:
        where = f": {err.filename}" if err.filename else ""
        raise CliError(f"{err.strerror or err}{where}") from None
