"""`corral token`: a bearer token for the master's web page (docs/security.md, "The web page").

The master issues it to the caller's principal (its certificate's); the page asks for it once
at /login and keeps it in a cookie; tools send it as `Authorization: Bearer TOKEN`. Kubernetes'
equivalent is `kubectl create token`; Mesos' web UI has no authentication of its own.
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime

from corral.cli.common import (
    add_master_arg,
    add_output_arg,
    add_timeout_arg,
    non_negative_float,
)
from corral.cli.operator_client import call_leader
from corral.v1 import operator_pb2


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "token",
        help="a bearer token for the master's web page, as this client's principal",
        description="Ask the master for a token acting as this client's principal (its "
        "certificate's), for the web page (paste it at https://MASTER:5080/login) or "
        "`curl -H 'Authorization: Bearer TOKEN'`.",
    )
    p.add_argument(
        "--ttl",
        type=non_negative_float,
        default=0.0,
        metavar="SECONDS",
        help="how long it is good for (default 8 hours; at most 7 days)",
    )
    add_output_arg(p)
    add_timeout_arg(p)
    add_master_arg(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    token, _address = call_leader(
        args.master,
        "IssueToken",
        operator_pb2.IssueTokenRequest(ttl_seconds=args.ttl),
        args.timeout,
    )
    expires = datetime.fromtimestamp(token.expires_at, UTC).isoformat(timespec="seconds")
    if args.output == "json":
        print(json.dumps({"token": token.token, "principal": token.principal, "expires": expires}))
        return 0
    print(token.token)
    print(
        f"# acts as {token.principal} until {expires}: paste it at /login on the master's "
        "HTTP port, or send it as 'Authorization: Bearer TOKEN'"
    )
    return 0
