"""`corral master`'s security flags (docs/security.md): --tls-dir or --insecure, and --acls,
read and checked before the master starts (a bad one is one line and exit 2)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from corral.cli.errors import CliError

if TYPE_CHECKING:
    from corral.acl import Acl
    from corral.master.security.tls import ServerTLS


def add_security_args(p: argparse.ArgumentParser) -> None:
    sec = p.add_argument_group("security (docs/security.md)")
    where = sec.add_mutually_exclusive_group()
    where.add_argument(
        "--tls-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="the master's certificate: DIR/ca.crt, DIR/tls.crt, DIR/tls.key (and DIR/token.key), "
        "as `corral certs init --dir D` writes them in D/master (default: a local CA in "
        "~/.corral/ca issues one at every start, and an operator credential in ~/.corral/tls "
        "that clients on this host find)",
    )
    where.add_argument(
        "--insecure",
        action="store_true",
        help="plain text: no TLS, no principals, no ACLs (clients need --insecure too); logged "
        "as a warning. For a lab, never for a shared network",
    )
    sec.add_argument(
        "--acls",
        type=Path,
        default=None,
        metavar="FILE",
        help="access control lists, YAML or JSON, deny by default, reloaded when the file "
        "changes (default: every certificate may do what its role does)",
    )


def tls_from_args(args: argparse.Namespace) -> ServerTLS | None:
    """The master's TLS from the flags (None: --insecure); a bad --tls-dir is exit 2."""
    from corral import pki
    from corral.logging import get_logger
    from corral.master.security import tls

    if args.insecure:
        get_logger("corral.master").warning(
            "insecure",
            detail="--insecure: plain text, no client certificates, no principals, no ACLs; "
            "anyone who reaches the ports controls the cluster",
        )
        return None
    try:
        if args.tls_dir is not None:
            return tls.load_dir(args.tls_dir)
        hosts = tuple(a.rpartition(":")[0] for a in (args.grpc, args.http))
        return tls.auto(args.work_dir, (*hosts, args.advertise_host))
    except pki.CertError as exc:
        raise CliError(str(exc), exit_code=2) from None
    except OSError as exc:
        raise CliError(f"cannot set up TLS: {exc}") from None


def acl_from_args(args: argparse.Namespace) -> Acl | None:
    """The --acls file, checked: a bad one is a usage error (exit 2) naming the problem."""
    if args.acls is None:
        return None
    if args.insecure:
        raise CliError(
            "--acls needs TLS: principals come from client certificates; drop --insecure",
            exit_code=2,
        )
    from corral.acl import AclError
    from corral.acl_files import load

    try:
        return load(args.acls)
    except AclError as exc:
        raise CliError(f"--acls {exc}", exit_code=2) from None


def security_from_args(args: argparse.Namespace, acl: Acl | None) -> dict[str, Any]:
    """``serve_forever``'s and ``serve_ha``'s security arguments: the TLS set up (a
    certificate issued), with the ACL already read (``acl_from_args``)."""
    return {"tls": tls_from_args(args), "acl": acl, "acl_file": args.acls}
