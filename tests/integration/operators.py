"""Operators with certificates of their own, for tests of who an action names.

On a TLS master (the default) an operator's action names the principal of its certificate,
never a name it declares. To tell one operator from another, a test gives each its own
certificate from the user's local CA (the one a LocalCluster's master makes in
``$CORRAL_HOME/ca``), as an administrator would: ``corral certs issue NAME --role operator
--dir ~/.corral/ca --out DIR``."""

from __future__ import annotations

from pathlib import Path

from corral.frameworks.sdk import tls as sdk_tls
from tests.integration.corral_cli import corral


def issue_operator(name: str, directory: Path) -> Path:
    """Operator ``name``'s credential in ``directory/name`` (for ``--tls-dir``), signed by the
    local CA: call it once a LocalCluster's master is up (it makes the CA on its first start)."""
    out = directory / name
    done = corral(
        *("certs", "issue", name, "--role", "operator"),
        *("--dir", str(sdk_tls.home() / "ca"), "--out", str(out)),
    )
    assert done.returncode == 0, done.stderr
    return out
