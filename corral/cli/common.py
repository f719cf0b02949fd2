"""Argument helpers shared by sub-commands."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from corral.cli.client_tls import add_tls_args

# Re-exported: the CLI's commands take them from here; frameworks from the SDK.
from corral.frameworks.sdk.argtypes import non_negative_float as non_negative_float
from corral.frameworks.sdk.argtypes import non_negative_int as non_negative_int
from corral.frameworks.sdk.argtypes import positive_float as positive_float
from corral.frameworks.sdk.argtypes import positive_int as positive_int
from corral.frameworks.sdk.detector import parse_master, parse_zk_url
from corral.roles import RoleError, check_role

DEFAULT_MASTER = "127.0.0.1:5050"
DEFAULT_HTTP = "127.0.0.1:5080"


def host_port(text: str) -> str:
    """argparse type for HOST:PORT; a bad value is a usage error (exit 2)."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT")
    return text


def master_spec(text: str) -> str:
    """argparse type for --master HOST:PORT[,HOST:PORT...] (or a zk:// URL)."""
    try:
        parse_master(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text.strip()


def zk_spec(text: str) -> str:
    """argparse type for --zk zk://HOST:PORT[,HOST:PORT...]/PATH."""
    try:
        parse_zk_url(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text.strip()


def role(text: str) -> str:
    """argparse type for a role name (Mesos' rules, corral.roles): a bad one is exit 2."""
    try:
        return check_role(text)
    except RoleError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


MAX_OPERATOR_NAME = 255  # the master's limit for names (corral.limits.MAX_NAME_LENGTH)


def operator_name(text: str) -> str:
    """argparse type for --as NAME: printable ASCII-safe text a gRPC header can carry."""
    if not text or len(text) > MAX_OPERATOR_NAME or not text.isprintable() or not text.isascii():
        raise argparse.ArgumentTypeError(
            f"{text[:64]!r} must be 1 to {MAX_OPERATOR_NAME} printable ASCII characters"
        )
    return text


def add_operator_arg(parser: argparse.ArgumentParser) -> None:
    """--as NAME: who a plain-text master records as asking for an operator's action (a TLS
    master records the certificate's principal: master/security/requester.py)."""
    parser.add_argument(
        "--as",
        dest="operator",
        type=operator_name,
        default=None,
        metavar="NAME",
        help="the operator name to declare to a plain-text master (--insecure; default: the "
        "context's, else $USER); a TLS master ignores it and records your certificate's "
        "principal",
    )


def add_timeout_arg(parser: argparse.ArgumentParser, default: float = 5.0) -> None:
    parser.add_argument(
        "--timeout",
        type=positive_float,
        default=default,
        help=f"seconds to wait for the master (default {default:g})",
    )


def add_output_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-o", "--output", choices=("text", "json"), default="text", help="text (default) or JSON"
    )


def add_master_arg(parser: argparse.ArgumentParser, zk_alias: bool = True) -> None:
    """--master or --zk, both into ``args.master`` (a master spec the SDK's detector reads;
    neither given, corral.cli.main sets it from CORRAL_MASTER or the current context), and the
    TLS flags every connection to a master takes (corral.cli.client_tls). ``zk_alias`` False:
    no --zk (a service's own --zk is its election; its master is ``--master zk://...``)."""
    parser.set_defaults(master_from_context=True)
    add_tls_args(parser)
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--master",
        type=master_spec,
        default=None,  # corral.cli.main resolves it: CORRAL_MASTER, the context, the default
        metavar="HOST:PORT[,HOST:PORT...]",
        help=f"the master's gRPC address, or several masters' to find the leader among "
        f"(default: $CORRAL_MASTER, else the current context's (corral config), else "
        f"{DEFAULT_MASTER})",
    )
    if not zk_alias:
        return
    where.add_argument(
        "--zk",
        dest="master",
        type=zk_spec,
        default=argparse.SUPPRESS,
        metavar="zk://HOST:PORT[,HOST:PORT...]/PATH",
        help="find the leading master in ZooKeeper (the masters' --zk)",
    )


def add_service_leadership_args(parser: argparse.ArgumentParser, what: str) -> None:
    """A service's leadership flags (the services scaffold, frameworks/service/leadership.py):
    --standby, --zk, --zk-session-timeout, --advertise; ``what`` it keeps ("apps", "jobs")."""
    parser.add_argument(
        "--standby",
        action="store_true",
        help="if another service holds the store, wait and take over when it is gone "
        "(instead of exiting 1); with --zk every service is a candidate",
    )
    parser.add_argument(
        "--zk",
        type=zk_spec,
        default=None,
        metavar="zk://HOST:PORT[,HOST:PORT...]/PATH",
        help=f"highly available: elect the leading service in ZooKeeper under PATH and keep the "
        f"{what} there (PATH-store), so standbys on other hosts take over (the master, if in "
        "ZooKeeper too: --master zk://...)",
    )
    parser.add_argument(
        "--zk-session-timeout",
        type=positive_float,
        default=6.0,
        metavar="SECONDS",
        help="the ZooKeeper session: a standby takes over about this long after the leader "
        "dies (default 6)",
    )
    parser.add_argument(
        "--advertise",
        default="",
        metavar="URL",
        help="with --zk, the URL standbys and clients are told to reach this service at "
        "(default: scheme://LISTEN-HOST:PORT, this host's name for a wildcard address)",
    )


def service_leadership(args: argparse.Namespace) -> Any:
    """The flags ``add_service_leadership_args`` added, as the scaffold's ``Leading``."""
    from corral.frameworks.service.process import Leading

    return Leading(
        standby=args.standby,
        zk=args.zk,
        zk_session_timeout=args.zk_session_timeout,
        advertise=args.advertise,
    )


def service_state_dir(service: str) -> Path:
    """Where a service on this host keeps its store and lock by default (its --state):
    ``$XDG_STATE_HOME/corral/SERVICE``, else ``~/.local/state/corral/SERVICE``."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "corral" / service
