"""Every client command's TLS flags (``--tls-dir``, ``--ca``/``--cert``/``--key``, ``--insecure``),
and the credential a command's connections use.

The flags are added with ``--master`` (``corral.cli.common.add_master_arg``), so every command
that talks to a master has them. ``apply`` turns them into the SDK's environment variables
(corral.frameworks.sdk.tls) before the command runs: the command's own channels, the SDK's
``Driver`` of a framework started by ``corral run``, the agent, and the processes the load
test and the demo start all find the same credential. With no flag, a client uses
``CORRAL_TLS_DIR`` or the operator credential a local master wrote to ``~/.corral/tls``.
"""

from __future__ import annotations

import argparse
import os

from corral.cli.errors import CliError
from corral.frameworks.sdk import tls as sdk_tls


def add_tls_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("TLS (docs/security.md)")
    group.add_argument(
        "--tls-dir",
        default=None,
        metavar="DIR",
        help="this client's credential: DIR/ca.crt, DIR/tls.crt, DIR/tls.key (default: "
        f"${sdk_tls.ENV_DIR}, else ~/.corral/tls, which a master on this host writes)",
    )
    group.add_argument("--ca", default=None, metavar="FILE", help="the cluster's CA certificate")
    group.add_argument("--cert", default=None, metavar="FILE", help="this client's certificate")
    group.add_argument("--key", default=None, metavar="FILE", help="this client's private key")
    group.add_argument(
        "--insecure",
        action="store_true",
        default=None,
        help="plain text, for a master started with --insecure only",
    )
    parser.set_defaults(client_tls=True)


def apply(args: argparse.Namespace) -> None:
    """Export the TLS flags of ``args`` (if its command has them) for the SDK to find; a flag
    that names a file that cannot be read, or flags that contradict, are a usage error."""
    if not getattr(args, "client_tls", False):
        return  # a command that talks to no master, or the master's own flags
    files = (args.ca, args.cert, args.key)
    given = [n for n, v in (("--tls-dir", args.tls_dir), ("--insecure", args.insecure)) if v]
    if any(files):
        given.append("--ca/--cert/--key")
    if len(given) > 1:
        raise CliError(f"{' and '.join(given)} contradict: give one", exit_code=2)
    try:
        if args.tls_dir:
            sdk_tls.TLS.from_dir(args.tls_dir)
            _export({sdk_tls.ENV_DIR: args.tls_dir})
        elif any(files):
            if not all(files):
                raise CliError("--ca, --cert and --key go together: give all three", exit_code=2)
            sdk_tls.TLS.from_files(args.ca, args.cert, args.key)
            _export(
                {sdk_tls.ENV_CA: args.ca, sdk_tls.ENV_CERT: args.cert, sdk_tls.ENV_KEY: args.key}
            )
        elif args.insecure:
            _export({sdk_tls.ENV_INSECURE: "1"})
    except sdk_tls.TLSError as exc:
        raise CliError(str(exc), exit_code=2) from None


def _export(values: dict[str, str]) -> None:
    for name in (
        sdk_tls.ENV_DIR,
        sdk_tls.ENV_CA,
        sdk_tls.ENV_CERT,
        sdk_tls.ENV_KEY,
        sdk_tls.ENV_INSECURE,
    ):
        os.environ.pop(name, None)  # a flag replaces whatever the environment said
    os.environ.update(
        {k: os.path.abspath(v) if k != sdk_tls.ENV_INSECURE else v for k, v in values.items()}
    )


def credentials() -> sdk_tls.Credentials:
    """The credential this command's connections use; none found is a usage error."""
    try:
        return sdk_tls.resolve()
    except sdk_tls.TLSError as exc:
        raise CliError(str(exc), exit_code=2) from None
