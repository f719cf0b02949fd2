"""The master's side of TLS: its certificate and key, the CA its clients' certificates must
chain to, and the key its web-page tokens are signed with.

Three ways to start (docs/security.md):
- ``--tls-dir DIR``: DIR holds ``ca.crt``, ``tls.crt`` and ``tls.key`` (what ``corral certs init
  --dir D`` writes in ``D/master``), and ``token.key`` if tokens must outlive a restart or work
  on every master of a highly available set.
- neither ``--tls-dir`` nor ``--insecure``: secure with no set-up, as k3s is. The user's local CA
  (``$CORRAL_HOME/ca``, default ``~/.corral/ca``) is made on the first start; each start issues
  the master a fresh certificate from it (kept in ``WORK_DIR/tls`` for inspection) and, if
  missing or not from that CA, the operator credential ``$CORRAL_HOME/tls`` that clients on this
  host find by default. The CA is the user's, not one per work dir, so that several masters on
  one host (a highly available set, a test suite) share the one credential clients find.
- ``--insecure``: plain text, no principals, no ACLs; logged as a warning at start.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import ssl
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc

from corral import pki
from corral.tls import home

LOCAL_OPERATOR = "admin"  # the principal of the operator credential a master writes locally


@dataclass(frozen=True, slots=True)
class ServerTLS:
    ca: bytes
    cert: bytes
    key: bytes
    token_key: bytes  # signs the web page's bearer tokens (http_auth.py)
    source: str  # where it came from, for the start-up log line

    def grpc_credentials(self) -> grpc.ServerCredentials:
        """Client certificates required: a peer without one from the CA fails the handshake."""
        return grpc.ssl_server_credentials(
            [(self.key, self.cert)], root_certificates=self.ca, require_client_auth=True
        )

    def http_context(self) -> ssl.SSLContext:
        """A client certificate is checked if presented, not required: a browser comes with a
        bearer token instead (http_auth.py decides what a request without either may see)."""
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cadata=self.ca.decode())
        with tempfile.TemporaryDirectory(prefix="corral-tls-") as tmp:
            # load_cert_chain reads files only; the copy lives as long as this call.
            cert, key = Path(tmp) / "tls.crt", Path(tmp) / "tls.key"
            cert.write_bytes(self.cert)
            pki.write_private(key, self.key)
            ctx.load_cert_chain(str(cert), str(key))
        ctx.verify_mode = ssl.CERT_OPTIONAL
        return ctx


def load_dir(directory: Path) -> ServerTLS:
    """``--tls-dir DIR``; CertError naming what is missing or wrong."""
    try:
        ca = (directory / pki.CA_FILE).read_bytes()
        cert = (directory / pki.CERT_FILE).read_bytes()
        key = (directory / pki.KEY_FILE).read_bytes()
    except OSError as exc:
        raise pki.CertError(
            f"--tls-dir {directory}: cannot read {exc.filename} ({exc.strerror or exc}); "
            "`corral certs init --dir D` writes the master's in D/master"
        ) from None
    who = pki.identity(cert)
    if pki.MASTER_ROLE not in who.roles:
        raise pki.CertError(
            f"--tls-dir {directory}: {pki.CERT_FILE} is not a master's certificate (its "
            f"roles: {', '.join(sorted(who.roles)) or 'none'}); `corral certs init` makes one"
        )
    if not pki.signed_by(cert, ca):
        raise pki.CertError(f"--tls-dir {directory}: {pki.CERT_FILE} is not signed by ca.crt")
    token_file = directory / pki.TOKEN_KEY_FILE
    token_key = token_file.read_bytes() if token_file.exists() else secrets.token_bytes(32)
    return ServerTLS(ca, cert, key, token_key, f"--tls-dir {directory}")


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """One process at a time sets up ``directory`` (masters started side by side)."""
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    with open(directory / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _local_ca(base: Path) -> tuple[pki.Pem, bytes]:
    ca_dir = base / "ca"
    ca_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    cert_file, key_file, token_file = ca_dir / "ca.crt", ca_dir / "ca.key", ca_dir / "token.key"
    if not (cert_file.exists() and key_file.exists()):
        ca = pki.make_ca(f"corral-local-ca@{os.uname().nodename}")
        pki.write_private(key_file, ca.key)
        pki.write_public(cert_file, ca.cert)
    if not token_file.exists():
        pki.write_private(token_file, secrets.token_bytes(32))
    return pki.Pem(cert_file.read_bytes(), key_file.read_bytes()), token_file.read_bytes()


def _operator_credential(base: Path, ca: pki.Pem) -> Path:
    """``base/tls``, issued again when missing, from another CA, or expiring within a month."""
    cred = base / "tls"
    cert = cred / pki.CERT_FILE
    current = cert.exists() and (cred / pki.KEY_FILE).exists()
    if (
        not current
        or not pki.signed_by(cert.read_bytes(), ca.cert)
        or pki.expires_within(cert.read_bytes(), 30)
    ):
        # It may also serve (the serving service on this host uses it for its HTTPS API).
        pem = pki.issue(ca, LOCAL_OPERATOR, "operator", hosts=pki.local_hosts())
        pki.write_credential(cred, ca.cert, pem)
    return cred


def auto(work_dir: Path | None, listen_hosts: tuple[str, ...] = ()) -> ServerTLS:
    """The no-set-up path (the module's docstring): the local CA, the operator credential, and
    a fresh master certificate naming this host."""
    base = home()
    with _locked(base):
        ca, token_key = _local_ca(base)
        cred = _operator_credential(base, ca)
    pem = pki.issue(ca, "master", pki.MASTER_ROLE, hosts=pki.local_hosts(*listen_hosts))
    if work_dir is not None:
        pki.write_credential(work_dir / "tls", ca.cert, pem)
    return ServerTLS(
        ca.cert,
        pem.cert,
        pem.key,
        token_key,
        f"local CA {base / 'ca'}; operator credential for clients on this host: {cred}",
    )
