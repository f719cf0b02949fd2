"""Client-side TLS: the credential a framework, an agent or a command presents to the master.

Every connection to a master is mutual TLS unless it was told, explicitly, to talk plain text.
A credential is a directory with ``ca.crt`` (the cluster's CA), ``tls.crt`` and ``tls.key``
(this client's certificate and key; its common name is the principal), or the three files
named one by one. What a client uses, first found wins:

1. what the code passes (``Driver(..., tls=TLS.from_dir(path))``, or ``tls=INSECURE``);
2. the environment: ``CORRAL_TLS_DIR``, or ``CORRAL_TLS_CA``/``_CERT``/``_KEY``, or
   ``CORRAL_INSECURE=1`` (the CLI's ``--tls-dir``/``--ca``/``--cert``/``--key``/``--insecure``
   set these, so a framework started by ``corral run`` gets them too);
3. ``$CORRAL_HOME/tls`` (default ``~/.corral/tls``): the operator credential a master started
   with neither ``--tls-dir`` nor ``--insecure`` writes for clients on its host, as k3s writes
   its kubeconfig.

Nothing found is an error that says what to do (``NoCredentials``): a client never falls back
to plain text on its own. The master's certificate is checked against the CA and the name
``master.corral`` (``MASTER_SERVER_NAME``), whatever address was dialled.
"""

from __future__ import annotations

import http.client
import os
import socket
import ssl
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import grpc
import grpc.aio

from corral.shared_channels import shared, stamp

MASTER_SERVER_NAME: Final = "master.corral"
CA_FILE: Final = "ca.crt"
CERT_FILE: Final = "tls.crt"
KEY_FILE: Final = "tls.key"
ENV_DIR: Final = "CORRAL_TLS_DIR"
ENV_CA: Final = "CORRAL_TLS_CA"
ENV_CERT: Final = "CORRAL_TLS_CERT"
ENV_KEY: Final = "CORRAL_TLS_KEY"
ENV_INSECURE: Final = "CORRAL_INSECURE"
ENV_HOME: Final = "CORRAL_HOME"


class TLSError(ValueError):
    """A credential that cannot be used (a missing or unreadable file); says which."""


class NoCredentials(TLSError):
    """No credential was given and none was found."""


@dataclass(frozen=True, slots=True)
class Insecure:
    """Plain text: only towards a master started with ``--insecure`` (a test, a lab)."""

    def __repr__(self) -> str:
        return "INSECURE"


INSECURE: Final = Insecure()


@dataclass(frozen=True, slots=True)
class TLS:
    """A client credential: the CA to check the master with, and this client's certificate
    and key. ``server_name`` is the name the master's certificate must carry."""

    ca: Path
    cert: Path
    key: Path
    server_name: str = MASTER_SERVER_NAME

    @classmethod
    def from_dir(cls, directory: str | os.PathLike[str]) -> TLS:
        d = Path(directory).expanduser()
        return cls(d / CA_FILE, d / CERT_FILE, d / KEY_FILE).checked()

    @classmethod
    def from_files(
        cls,
        ca: str | os.PathLike[str],
        cert: str | os.PathLike[str],
        key: str | os.PathLike[str],
    ) -> TLS:
        return cls(Path(ca).expanduser(), Path(cert).expanduser(), Path(key).expanduser()).checked()

    def checked(self) -> TLS:
        """Self, once every file can be read; TLSError naming the first that cannot."""
        for what, path in (("CA", self.ca), ("certificate", self.cert), ("key", self.key)):
            try:
                with path.open("rb") as f:
                    if not f.read(1):
                        raise TLSError(f"the TLS {what} file {path} is empty")
            except OSError as exc:
                raise TLSError(
                    f"cannot read the TLS {what} file {path}: {exc.strerror or exc}"
                ) from None
        return self

    def _pems(self) -> tuple[bytes, bytes, bytes]:
        try:
            return self.ca.read_bytes(), self.cert.read_bytes(), self.key.read_bytes()
        except OSError as exc:
            raise TLSError(f"cannot read {exc.filename}: {exc.strerror or exc}") from None

    def channel_credentials(self) -> grpc.ChannelCredentials:
        ca, cert, key = self._pems()
        return grpc.ssl_channel_credentials(
            root_certificates=ca, private_key=key, certificate_chain=cert
        )

    def channel_options(self) -> list[tuple[str, Any]]:
        """The name checked in the master's certificate, whatever address was dialled."""
        return [("grpc.ssl_target_name_override", self.server_name)]

    def ssl_context(self) -> ssl.SSLContext:
        """For HTTPS to the master (or the serving service): checks the peer against the CA
        and presents this credential. The name to check is given per connection
        (``server_hostname``: ``self.server_name`` for a master)."""
        ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=str(self.ca))
        try:
            ctx.load_cert_chain(str(self.cert), str(self.key))
        except (OSError, ssl.SSLError) as exc:
            raise TLSError(f"cannot load {self.cert} with {self.key}: {exc}") from None
        return ctx

    def server_context(self) -> ssl.SSLContext:
        """For serving HTTPS with this credential (the serving service's API): clients must
        present a certificate from the same CA. The certificate must name the hosts it is
        reached at (``corral certs issue NAME --host HOST``)."""
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(self.ca))
        try:
            ctx.load_cert_chain(str(self.cert), str(self.key))
        except (OSError, ssl.SSLError) as exc:
            raise TLSError(f"cannot load {self.cert} with {self.key}: {exc}") from None
        ctx.verify_mode = ssl.CERT_REQUIRED
        return ctx


def peer_roles(peercert: Mapping[str, Any] | None) -> tuple[str, frozenset[str]]:
    """The principal and certificate roles of a verified peer certificate as ``ssl`` decodes
    it (``getpeercert()``): the subject's CN, and each ``corral:ROLE`` organization. ("", {})
    when there is none."""
    if not peercert:
        return "", frozenset()
    name, roles = "", set()
    for rdn in peercert.get("subject", ()):
        for key, value in rdn:
            if key == "commonName" and not name:
                name = str(value)
            elif key == "organizationName" and str(value).startswith("corral:"):
                roles.add(str(value)[len("corral:") :])
    return name, frozenset(roles)


Credentials = TLS | Insecure


def home() -> Path:
    """Corral's per-user directory: ``$CORRAL_HOME``, default ``~/.corral``."""
    return Path(os.environ.get(ENV_HOME) or Path.home() / ".corral")


def local_credential_dir() -> Path:
    return home() / "tls"


def _truthy(text: str | None) -> bool:
    return (text or "").strip().lower() in {"1", "true", "yes", "on"}


def from_environment(env: Mapping[str, str] | None = None) -> Credentials | None:
    """What the environment says (rule 2 of the module's docstring), or None."""
    env = os.environ if env is None else env
    files = [env.get(ENV_CA), env.get(ENV_CERT), env.get(ENV_KEY)]
    if env.get(ENV_DIR):
        return TLS.from_dir(env[ENV_DIR])
    if any(files):
        if not all(files):
            raise TLSError(f"{ENV_CA}, {ENV_CERT} and {ENV_KEY} go together: set all three")
        ca, cert, key = (str(f) for f in files)
        return TLS.from_files(ca, cert, key)
    if _truthy(env.get(ENV_INSECURE)):
        return INSECURE
    return None


def resolve(tls: Credentials | None = None) -> Credentials:
    """The credential to use (the module's rules); NoCredentials if there is none."""
    if tls is not None:
        return tls
    found = from_environment()
    if found is not None:
        return found
    local = local_credential_dir()
    if (local / CERT_FILE).exists():
        return TLS.from_dir(local)
    raise NoCredentials(
        f"no TLS credential: pass --tls-dir DIR (or set {ENV_DIR}), or run a master on this "
        f"host first (it writes one to {local}); --insecure only for a master started with "
        "--insecure"
    )


def describe(tls: Credentials) -> str:
    return "plain text (insecure)" if isinstance(tls, Insecure) else f"TLS ({tls.cert.parent})"


def aio_channel(
    address: str, tls: Credentials, options: Sequence[tuple[str, Any]] = ()
) -> grpc.aio.Channel:
    """An asyncio channel to the master at ``address``. Over TLS, the channels of one event
    loop to one address with one credential and the same options share one connection, as
    gRPC's plain-text channels do (shared_channels.py)."""
    if isinstance(tls, Insecure):
        return grpc.aio.insecure_channel(address, options=list(options))
    opts = [*options, *tls.channel_options()]
    key = (address, tls, stamp(tls.ca, tls.cert, tls.key), tuple(opts))
    return shared(
        key, lambda: grpc.aio.secure_channel(address, tls.channel_credentials(), options=opts)
    )


def channel(
    address: str, tls: Credentials, options: Sequence[tuple[str, Any]] = ()
) -> grpc.Channel:
    """A blocking channel to the master at ``address`` (the CLI's one-shot calls)."""
    if isinstance(tls, Insecure):
        return grpc.insecure_channel(address, options=list(options))
    return grpc.secure_channel(
        address, tls.channel_credentials(), options=[*options, *tls.channel_options()]
    )


def http_base(address: str, tls: Credentials) -> str:
    """``https://HOST:PORT`` (``http://`` only for an insecure master)."""
    scheme = "http" if isinstance(tls, Insecure) else "https"
    return f"{scheme}://{address}"


class _MasterHTTPS(http.client.HTTPSConnection):
    """HTTPS whose certificate check names ``server_name`` rather than the host dialled."""

    def __init__(
        self,
        host: str,
        port: int | None,
        *,
        context: ssl.SSLContext,
        server_name: str,
        timeout: float,
    ) -> None:
        super().__init__(host, port, context=context, timeout=timeout)
        self._server_name = server_name
        self._ctx = context

    def connect(self) -> None:
        self.sock = socket.create_connection((self.host, self.port), self.timeout)
        self.sock = self._ctx.wrap_socket(self.sock, server_hostname=self._server_name)


def http_get(url_path: str, address: str, tls: Credentials, timeout: float = 10.0) -> bytes:
    """GET ``url_path`` (``/metrics``) from the master's HTTP port at ``address``, standard
    library only; OSError (with the status) for an answer other than 200."""
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    conn: http.client.HTTPConnection
    if isinstance(tls, Insecure):
        conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    else:
        conn = _MasterHTTPS(
            host,
            int(port),
            context=tls.ssl_context(),
            server_name=tls.server_name,
            timeout=timeout,
        )
    try:
        conn.request("GET", urllib.parse.quote(url_path, safe="/?=&"))
        response = conn.getresponse()
        body = response.read()
        if response.status != 200:
            raise OSError(f"GET {url_path}: HTTP {response.status} {body[:200]!r}")
        return body
    finally:
        conn.close()
