"""`corral master`'s Mesos API flags (docs/mesos-compat.md): --mesos-api ADDR and how it is
secured: --mesos-credentials FILE (HTTP Basic, Mesos' --credentials format) or, explicitly,
--mesos-api-open; TLS with the master's certificate unless --mesos-api-plaintext."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from corral.cli.common import host_port
from corral.cli.errors import CliError

if TYPE_CHECKING:
    from corral.master.mesos_api.server import MesosApiOptions


def add_mesos_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("Mesos API (docs/mesos-compat.md)")
    g.add_argument(
        "--mesos-api",
        type=host_port,
        metavar="HOST:PORT",
        help="also serve Mesos' v1 scheduler API (POST /api/v1/scheduler, /version, "
        "/master/state) here, so unmodified Mesos frameworks (pymesos, ...) run on Corral",
    )
    g.add_argument(
        "--mesos-credentials",
        type=Path,
        metavar="FILE",
        help="the Mesos API's HTTP Basic credentials, Mesos' format: {\"credentials\": "
        '[{"principal": P, "secret": S}]}; principals are checked by the same ACLs as '
        "certificates",
    )
    g.add_argument(
        "--mesos-api-open",
        action="store_true",
        help="serve the Mesos API without authentication: every caller is anonymous "
        "(logged as a warning)",
    )
    g.add_argument(
        "--mesos-api-plaintext",
        action="store_true",
        help="serve the Mesos API in plain HTTP, as pymesos needs (logged as a warning); "
        "default: TLS with the master's certificate",
    )


def mesos_from_args(args: argparse.Namespace) -> MesosApiOptions | None:
    """The Mesos API's options from the flags; a flag without --mesos-api, an unreadable
    credentials file or an unsafe combination is a usage error (exit 2)."""
    if args.mesos_api is None:
        for flag, given in (
            ("--mesos-credentials", args.mesos_credentials is not None),
            ("--mesos-api-open", args.mesos_api_open),
            ("--mesos-api-plaintext", args.mesos_api_plaintext),
        ):
            if given:
                raise CliError(f"{flag} needs --mesos-api HOST:PORT", exit_code=2)
        return None
    from corral.master.mesos_api import credentials
    from corral.master.mesos_api.server import MesosApiError, MesosApiOptions, check

    creds = None
    if args.mesos_credentials is not None:
        try:
            creds = credentials.load(args.mesos_credentials)
        except credentials.CredentialsError as exc:
            raise CliError(f"--mesos-credentials {exc}", exit_code=2) from None
    options = MesosApiOptions(
        address=args.mesos_api,
        credentials=creds,
        open=args.mesos_api_open,
        plaintext=args.mesos_api_plaintext,
    )
    try:
        check(options, tls=not args.insecure)  # TLS itself is set up later
    except MesosApiError as exc:
        raise CliError(str(exc), exit_code=2) from None
    return options
