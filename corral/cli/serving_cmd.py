"""`corral serving serve`: the serving service (many apps through an HTTP API, kept in a store,
taken back after a restart; docs/frameworks.md, "The serving service")."""

from __future__ import annotations

import argparse
from pathlib import Path

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

DEFAULT_LISTEN = "127.0.0.1:5090"
WEEK = 7 * 24 * 3600.0


def default_state_dir() -> Path:
    return service_state_dir("serving")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "serving",
        help="the serving service: long-running apps through an HTTP API (corral app ...)",
        description="The serving framework as a service (Marathon's role).",
    )
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)
    s = verbs.add_parser(
        "serve",
        help="run the serving service",
        description="Run the serving service: apps are created, scaled, rolled and deleted "
        "through its HTTP API (`corral app ...`), kept in a SQLite store in --state, and keep "
        "running through a restart of the service. Only one service acts on a store at a "
        "time: a second one exits 1 naming the first, or with --standby waits and takes over "
        "when the first is gone.",
    )
    add_master_arg(s, zk_alias=False)
    s.add_argument(
        "--state",
        type=Path,
        default=None,
        metavar="DIR",
        help=f"where the app store and its lock live (default {default_state_dir()})",
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
        help="how long the master keeps the apps' instances while the service is away "
        "(default a week, as Marathon's)",
    )
    add_service_leadership_args(s, "apps")
    s.add_argument(
        "--dns",
        type=host_port,
        default=None,
        metavar="HOST:PORT",
        help="serve the apps' ready instances by DNS here, UDP and TCP (e.g. 127.0.0.1:5353; "
        "port 0: any free port): A APP.DOMAIN, SRV _PORT._tcp.APP.DOMAIN",
    )
    s.add_argument(
        "--dns-domain",
        type=_domain,
        default="corral",
        metavar="DOMAIN",
        help="the zone the DNS server answers for (default corral)",
    )
    s.add_argument(
        "--dns-ttl",
        type=_ttl,
        default=2,
        metavar="SECONDS",
        help="the TTL of its answers, negative ones too (default 2)",
    )
    s.add_argument(
        "--dns-forward",
        type=_forward,
        default=None,
        metavar="IP:PORT",
        help="ask this DNS server about names outside the domain (default: refuse them)",
    )
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


def _domain(text: str) -> str:
    from corral.frameworks.serving.dns_names import parse_domain

    try:
        return parse_domain(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _forward(text: str) -> tuple[str, int]:
    from corral.frameworks.serving.dns_names import parse_forward

    try:
        return parse_forward(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _ttl(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 86400:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of seconds, 0..86400")
    return value


def run(args: argparse.Namespace) -> int:
    import asyncio

    from corral.frameworks import sdk
    from corral.frameworks.service.records import StoreError
    from corral.frameworks.service.store_lock import StoreLocked
    from corral.frameworks.serving import serve

    sdk.configure_logging(args.log_level)
    credentials()  # none found: one line and exit 2, before the store is touched
    state = args.state or default_state_dir()
    try:
        return asyncio.run(
            serve.main(
                state,
                args.master,
                args.listen,
                args.failover_timeout,
                args.ready_file,
                service_leadership(args),
                dns=None
                if args.dns is None
                else serve.DnsOptions(args.dns, args.dns_domain, args.dns_ttl, args.dns_forward),
            )
        )
    except (StoreLocked, StoreError) as err:
        raise CliError(str(err)) from None
    except OSError as err:
        where = f": {err.filename}" if err.filename else ""
        raise CliError(f"{err.strerror or err}{where}") from None
