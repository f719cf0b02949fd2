"""`corral set weight|quota ROLE ...`: set a role's weight or quota on the master at run time.

A client command (base install): it parses the flags with ``corral.roles`` (a bad value is a
usage error, exit 2) and leaves the rest to the master, whose refusal (a limit below the
guarantee, ...) is one line with its reason, exit 1.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

from corral.cli.common import add_master_arg, add_timeout_arg, positive_float, role
from corral.cli.errors import CliError
from corral.cli.operator_client import call_operator
from corral.resources import SCALARS
from corral.roles import RoleError, format_scalars, parse_scalars
from corral.v1 import operator_pb2


def _spec(what: str) -> Callable[[str], dict[str, float]]:
    def parse(text: str) -> dict[str, float]:
        try:
            return parse_scalars(text, what)
        except RoleError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("set", help="set a role's weight or quota")
    kinds = p.add_subparsers(dest="what", metavar="weight|quota", required=True)

    w = kinds.add_parser("weight", help="a role's DRF weight (default 1)")
    w.add_argument("role", metavar="ROLE", type=role, help="the role, e.g. web")
    w.add_argument(
        "weight", metavar="WEIGHT", type=positive_float, help="its DRF weight, a number > 0"
    )
    add_timeout_arg(w)
    add_master_arg(w)
    w.set_defaults(func=run_weight)

    q = kinds.add_parser(
        "quota",
        help="a role's quota: a guarantee served first, a limit never offered past",
        description="Replaces the role's quota. Resources left out of --limit are unlimited; "
        "--clear removes the quota.",
    )
    q.add_argument("role", metavar="ROLE", type=role, help="the role, e.g. web")
    q.add_argument(
        "--guarantee", type=_spec("guarantee"), metavar="SPEC", help="e.g. 'cpus:10;mem:4096'"
    )
    q.add_argument("--limit", type=_spec("limit"), metavar="SPEC", help="e.g. 'cpus:40'")
    q.add_argument("--clear", action="store_true", help="no guarantee and no limit")
    add_timeout_arg(q)
    add_master_arg(q)
    q.set_defaults(func=run_quota)


def run_weight(args: argparse.Namespace) -> int:
    request = operator_pb2.SetWeightRequest(role=args.role, weight=args.weight)
    call_operator(args.master, "SetWeight", request, args.timeout)
    print(f"role {args.role}: weight {args.weight:g}")
    return 0


def run_quota(args: argparse.Namespace) -> int:
    given = args.guarantee is not None or args.limit is not None
    if args.clear == given:
        raise CliError("give --guarantee and/or --limit, or --clear (alone)", exit_code=2)
    guarantee: dict[str, float] = args.guarantee or {}
    limit: dict[str, float] = args.limit or {}
    quota = operator_pb2.Quota()
    for name, value in guarantee.items():
        setattr(quota.guarantee, name, value)
    for name, value in limit.items():
        setattr(quota.limit, name, value)
    request = operator_pb2.SetQuotaRequest(role=args.role, quota=quota)
    call_operator(args.master, "SetQuota", request, args.timeout)
    if args.clear:
        print(f"role {args.role}: quota cleared")
    else:
        g = format_scalars([guarantee.get(n, 0.0) for n in SCALARS])
        lim = format_scalars([limit.get(n, math.inf) for n in SCALARS])
        print(f"role {args.role}: quota guarantee {g}, limit {lim}")
    return 0
