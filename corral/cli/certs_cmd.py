"""`corral certs init|issue`: a development CA, the master's certificate, and client
certificates for frameworks, agents and operators (docs/security.md, "Certificates").

The Kubernetes and Mesos equivalents: kubeadm's `certs` phase and `kubeadm kubeconfig user`;
Mesos has none (SASL secrets are hand-written files). Each credential is a directory with
ca.crt, tls.crt and tls.key (0600): what every `--tls-dir` reads.
"""

from __future__ import annotations

import argparse
import secrets
from pathlib import Path

from corral.cli.common import positive_int
from corral.cli.errors import CliError

ROLES = ("framework", "agent", "operator")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "certs",
        help="make a CA and certificates for the master, frameworks, agents and operators",
        description="Certificates for mutual TLS (docs/security.md). `init` makes a CA and the "
        "master's certificate; `issue` a client's. A certificate's common name is its "
        "principal, its role what the master's default grants (and ACLs) call cert_roles.",
    )
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)
    init = verbs.add_parser(
        "init",
        help="a new CA in DIR and the master's certificate in DIR/master",
        description="Make DIR/ca.crt and DIR/ca.key (keep it safe: it signs every identity), "
        "and the master's credential in DIR/master (ca.crt, tls.crt, tls.key, token.key): "
        "`corral master --tls-dir DIR/master`.",
    )
    init.add_argument("--dir", type=Path, required=True, metavar="DIR", help="where to write")
    init.add_argument(
        "--host",
        action="append",
        default=[],
        metavar="HOST",
        help="a name or address the master is reached at, for curl and browsers (repeatable; "
        "localhost, 127.0.0.1 and this host's name are always in; Corral's own clients check "
        "the name master.corral, which every master certificate carries)",
    )
    init.add_argument(
        "--days", type=positive_int, default=365, help="the master certificate's life (365)"
    )
    init.add_argument("--force", action="store_true", help="replace a CA already in DIR")
    init.set_defaults(func=run_init, needs_server=True)

    issue = verbs.add_parser(
        "issue",
        help="a client certificate signed by DIR's CA, in DIR/NAME",
        description="Issue a certificate for principal NAME with certificate role ROLE, signed "
        "by the CA of `corral certs init --dir DIR`, into DIR/NAME (or --out): give that "
        "directory to the client's --tls-dir.",
    )
    issue.add_argument("name", metavar="NAME", help="the principal (the certificate's CN)")
    issue.add_argument("--role", required=True, choices=ROLES, help="its certificate role")
    issue.add_argument("--dir", type=Path, required=True, metavar="DIR", help="the CA's dir")
    issue.add_argument(
        "--out", type=Path, default=None, metavar="OUTDIR", help="where (default DIR/NAME)"
    )
    issue.add_argument(
        "--host",
        action="append",
        default=[],
        metavar="HOST",
        help="a name it serves HTTPS at (the serving service's API), repeatable",
    )
    issue.add_argument("--days", type=positive_int, default=365, help="its life (365)")
    issue.add_argument("--force", action="store_true", help="replace a credential in OUTDIR")
    issue.set_defaults(func=run_issue, needs_server=True)


def _refuse_existing(path: Path, force: bool) -> None:
    if path.exists() and not force:
        raise CliError(f"{path} exists; --force replaces it")


def run_init(args: argparse.Namespace) -> int:
    from corral import pki

    directory: Path = args.dir
    if directory.exists() and not directory.is_dir():
        raise CliError(f"--dir {directory} is not a directory", exit_code=2)
    _refuse_existing(directory / "ca.key", args.force)
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        ca = pki.make_ca()
        pki.write_private(directory / "ca.key", ca.key)
        pki.write_public(directory / "ca.crt", ca.cert)
        master = pki.issue(
            ca, "master", pki.MASTER_ROLE, hosts=pki.local_hosts(*args.host), days=args.days
        )
        out = pki.write_credential(directory / "master", ca.cert, master)
        pki.write_private(out / pki.TOKEN_KEY_FILE, secrets.token_bytes(32))
    except pki.CertError as exc:
        raise CliError(str(exc), exit_code=2) from None
    except OSError as exc:
        raise CliError(f"cannot write in {directory}: {exc.strerror or exc}") from None
    print(f"CA: {directory / 'ca.crt'} (its key {directory / 'ca.key'}: keep it safe)")
    print(f"master: corral master --tls-dir {out}")
    print(f"clients: corral certs issue NAME --role framework|agent|operator --dir {directory}")
    return 0


def run_issue(args: argparse.Namespace) -> int:
    from corral import pki

    out: Path = args.out or args.dir / args.name
    try:
        pki.check_name(args.name)
        ca = pki.read_ca(args.dir)
        _refuse_existing(out / pki.CERT_FILE, args.force)
        pem = pki.issue(ca, args.name, args.role, hosts=args.host, days=args.days)
        pki.write_credential(out, ca.cert, pem)
    except pki.CertError as exc:
        raise CliError(str(exc), exit_code=2) from None
    except OSError as exc:
        raise CliError(f"cannot write in {out}: {exc.strerror or exc}") from None
    print(f"{args.role} {args.name}: --tls-dir {out}")
    return 0
