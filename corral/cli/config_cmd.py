"""`corral config`: named contexts, so the master is set once (kubectl config).

    corral config set-context prod --master m1:5050,m2:5050 [--as alice] [--use]
    corral config use-context prod
    corral config get-contexts
    corral config current-context
    corral config delete-context prod

A context is a master spec (``--master`` or ``--zk``) and the operator name to declare for
operators' actions (a plain-text master records it; a TLS master records the principal of the
client's certificate). ``CORRAL_MASTER`` and ``--master``/``--zk`` win over the current context
(corral/cli/contexts.py).
"""

from __future__ import annotations

import argparse

from corral.cli import contexts
from corral.cli.common import master_spec, operator_name, zk_spec
from corral.cli.errors import CliError
from corral.cli.table import print_table


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("config", help="named contexts: which master the commands talk to")
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)
    s = verbs.add_parser("set-context", help="add or change a context")
    s.add_argument("name", metavar="NAME", help="the context's name")
    where = s.add_mutually_exclusive_group()
    where.add_argument(
        "--master",
        type=master_spec,
        metavar="HOST:PORT[,HOST:PORT...]",
        help="the master's gRPC address, or several masters' (as --master everywhere)",
    )
    where.add_argument(
        "--zk",
        dest="master",
        type=zk_spec,
        metavar="zk://HOST:PORT/PATH",
        help="find the leading master in ZooKeeper",
    )
    s.add_argument(
        "--as",
        dest="operator",
        type=operator_name,
        default=None,
        metavar="NAME",
        help="the operator name the CLI declares for operators' actions (counted by a "
        "plain-text master only: a TLS master records the certificate's principal)",
    )
    s.add_argument("--use", action="store_true", help="and make it the current context")
    s.set_defaults(func=set_context)
    u = verbs.add_parser("use-context", help="make a context the current one")
    u.add_argument("name", metavar="NAME", help="the context to use from now on")
    u.set_defaults(func=use_context)
    g = verbs.add_parser("get-contexts", help="list the contexts (* marks the current one)")
    g.set_defaults(func=get_contexts)
    c = verbs.add_parser("current-context", help="print the current context's name")
    c.set_defaults(func=current_context)
    d = verbs.add_parser("delete-context", help="remove a context")
    d.add_argument("name", metavar="NAME", help="the context to remove")
    d.set_defaults(func=delete_context)


def set_context(args: argparse.Namespace) -> int:
    current, ctxs = contexts.load()
    old = ctxs.get(args.name)
    if old is None and args.master is None:
        raise CliError(f"context {args.name!r} is new: give its --master or --zk", exit_code=2)
    ctxs[args.name] = contexts.Context(
        args.name,
        args.master if args.master is not None else old.master if old else "",
        args.operator if args.operator is not None else old.operator if old else "",
    )
    if args.use or not current:
        current = args.name
    path = contexts.save(current, ctxs)
    print(f"context {args.name} set in {path}" + (" (current)" if current == args.name else ""))
    return 0


def use_context(args: argparse.Namespace) -> int:
    _, ctxs = contexts.load()
    if args.name not in ctxs:
        known = ", ".join(sorted(ctxs)) or "none: corral config set-context NAME --master ..."
        raise CliError(f"no context {args.name!r} (contexts: {known})", exit_code=2)
    contexts.save(args.name, ctxs)
    print(f"switched to context {args.name}")
    return 0


def get_contexts(args: argparse.Namespace) -> int:
    current, ctxs = contexts.load()
    rows = [
        ["*" if name == current else "", name, c.master, c.operator or "-"]
        for name, c in sorted(ctxs.items())
    ]
    print_table(["CURRENT", "NAME", "MASTER", "OPERATOR"], rows, empty="(no contexts)")
    return 0


def current_context(args: argparse.Namespace) -> int:
    current, _ = contexts.load()
    if not current:
        raise CliError("no current context (corral config use-context NAME)")
    print(current)
    return 0


def delete_context(args: argparse.Namespace) -> int:
    current, ctxs = contexts.load()
    if ctxs.pop(args.name, None) is None:
        raise CliError(f"no context {args.name!r}", exit_code=2)
    contexts.save("" if current == args.name else current, ctxs)
    print(f"context {args.name} deleted")
    return 0
