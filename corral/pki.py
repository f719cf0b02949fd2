"""Corral's certificates: a development CA, the master's certificate and client certificates
(``corral certs init`` / ``corral certs issue``, and a master's own set-up when it is given no
``--tls-dir``). The ``cryptography`` library does the work (the ``server`` extra).

What a certificate says (docs/security.md, "Certificates"):
- the **principal** is the subject's common name (CN); the **certificate role** (framework,
  agent, operator, or master) is its organization, ``corral:ROLE``, as Kubernetes reads groups
  from a client certificate's O. Whoever holds the CA's key decides both.
- Every master certificate names ``master.corral`` (``MASTER_SERVER_NAME``) among its DNS names:
  Corral's clients check that name, whatever address they dialled (an IP, a Compose service, a
  leader named in ZooKeeper), as Nomad's clients check ``server.<region>.nomad``. A client
  certificate never carries it, so a tenant's certificate cannot pass for a master. The
  master's certificate also names the hosts it is reached at, for curl and browsers.
- Client certificates are for client authentication; given ``hosts`` they may also serve
  (the serving service's HTTPS API).

A credential is a directory with ``ca.crt``, ``tls.crt`` and ``tls.key`` (the key 0600), the
layout of a Kubernetes TLS secret: ``--tls-dir DIR`` everywhere reads that.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import re
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

# Held equal to corral.tls.MASTER_SERVER_NAME by a test (corral.tls, in the base install, may
# not import this module: cryptography is the server extra's).
MASTER_SERVER_NAME = "master.corral"
ROLES = ("framework", "agent", "operator")
MASTER_ROLE = "master"
ROLE_PREFIX = "corral:"
CA_FILE, CERT_FILE, KEY_FILE = "ca.crt", "tls.crt", "tls.key"
TOKEN_KEY_FILE = "token.key"  # the master's key for the web page's bearer tokens
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@:-]{0,127}")
_DAY = datetime.timedelta(days=1)


class CertError(Exception):
    """A name, role, file or certificate Corral cannot use; the message says which."""


def check_name(name: str) -> str:
    """A principal's name: letters, digits and ``._@:-``, at most 128, not starting with a
    symbol (it appears in ACLs, events and file names)."""
    if not _NAME.fullmatch(name):
        raise CertError(
            f"{name!r} is not a principal name (letters, digits and . _ @ : -, starting with a "
            "letter or digit, at most 128)"
        )
    return name


@dataclass(frozen=True, slots=True)
class Pem:
    """A certificate and its private key, PEM-encoded."""

    cert: bytes
    key: bytes


def _key() -> ec.EllipticCurvePrivateKey:
    # P-256: handshakes several times cheaper than RSA-2048 for the same strength.
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def make_ca(common_name: str = "corral-ca", days: int = 3650) -> Pem:
    """A new self-signed CA that may sign certificates (and no further CAs)."""
    key = _key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _DAY)
        .not_valid_after(now + days * _DAY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return Pem(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def _load_ca(ca: Pem) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    try:
        cert = x509.load_pem_x509_certificate(ca.cert)
        key = serialization.load_pem_private_key(ca.key, password=None)
    except (ValueError, TypeError) as exc:
        raise CertError(f"not a CA certificate and key: {exc}") from None
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise CertError("the CA key is not an elliptic-curve key (corral certs init makes one)")
    return cert, key


def _san(hosts: Iterable[str]) -> list[x509.GeneralName]:
    names: list[x509.GeneralName] = []
    seen: set[str] = set()
    for host in hosts:
        host = host.strip().strip("[]")
        if not host or host in seen:
            continue
        seen.add(host)
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return names


def issue(
    ca: Pem,
    name: str,
    role: str,
    hosts: Iterable[str] = (),
    days: int = 365,
) -> Pem:
    """A certificate for principal ``name`` with certificate role ``role`` (one of ``ROLES``, or
    ``master``), signed by ``ca``. A master's names ``MASTER_SERVER_NAME`` and ``hosts``; a
    client's names ``hosts`` if any (and may then serve too)."""
    check_name(name)
    if role not in (*ROLES, MASTER_ROLE):
        raise CertError(f"unknown certificate role {role!r}; one of {', '.join(ROLES)}")
    ca_cert, ca_key = _load_ca(ca)
    key = _key()
    now = _now()
    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.COMMON_NAME, name),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, ROLE_PREFIX + role),
        ]
    )
    host_list = list(hosts)
    if role == MASTER_ROLE:
        host_list = [MASTER_SERVER_NAME, *host_list]
    elif MASTER_SERVER_NAME in (h.strip() for h in host_list):
        raise CertError(f"only a master's certificate may name {MASTER_SERVER_NAME}")
    usages = [ExtendedKeyUsageOID.CLIENT_AUTH]
    if host_list:
        usages.append(ExtendedKeyUsageOID.SERVER_AUTH)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _DAY)
        .not_valid_after(now + days * _DAY)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
    )
    san = _san(host_list)
    if san:
        builder = builder.add_extension(x509.SubjectAlternativeName(san), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    return Pem(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def local_hosts(*extra: str) -> list[str]:
    """The names this host is reached at locally: localhost, the loopback addresses, its
    hostname and fully qualified name, and ``extra`` (listen hosts other than 0.0.0.0)."""
    hosts = ["localhost", "127.0.0.1", "::1", socket.gethostname(), socket.getfqdn()]
    for host in extra:
        host = host.strip("[]")
        if host and host not in {"0.0.0.0", "::"}:
            hosts.append(host)
    return hosts


@dataclass(frozen=True, slots=True)
class Identity:
    """What a certificate says about its holder."""

    name: str
    roles: frozenset[str]


def identity(cert_pem: bytes) -> Identity:
    """The principal and certificate roles of a PEM certificate (CertError if it is none)."""
    try:
        cert = x509.load_pem_x509_certificate(cert_pem)
    except ValueError as exc:
        raise CertError(f"not a PEM certificate: {exc}") from None
    cns = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    if not cns:
        raise CertError("the certificate has no common name (CN): it names no principal")
    orgs = cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)
    roles = frozenset(
        str(o.value)[len(ROLE_PREFIX) :] for o in orgs if str(o.value).startswith(ROLE_PREFIX)
    )
    return Identity(str(cns[0].value), roles)


def signed_by(cert_pem: bytes, ca_pem: bytes) -> bool:
    """Whether ``cert_pem`` was issued by the CA of ``ca_pem`` (its signature checks)."""
    try:
        cert = x509.load_pem_x509_certificate(cert_pem)
        ca = x509.load_pem_x509_certificate(ca_pem)
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def expires_within(cert_pem: bytes, days: float) -> bool:
    cert = x509.load_pem_x509_certificate(cert_pem)
    return bool(cert.not_valid_after_utc - _now() < days * _DAY)


# --- files ----------------------------------------------------------------------------------


def write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` readable by its owner only, atomically (a reader never sees
    half a key)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    tmp.replace(path)


def write_public(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    tmp.replace(path)


def write_credential(directory: Path, ca_cert: bytes, pem: Pem) -> Path:
    """``directory`` (made 0700) with ca.crt, tls.crt and tls.key (0600)."""
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    write_public(directory / CA_FILE, ca_cert)
    write_private(directory / KEY_FILE, pem.key)
    write_public(directory / CERT_FILE, pem.cert)
    return directory


def read_ca(directory: Path) -> Pem:
    """The CA of ``corral certs init --dir DIR`` (ca.crt and ca.key in DIR)."""
    try:
        return Pem((directory / "ca.crt").read_bytes(), (directory / "ca.key").read_bytes())
    except OSError as exc:
        raise CertError(
            f"no CA in {directory} ({exc.strerror or exc}: {exc.filename}); "
            f"make one with `corral certs init --dir {directory}`"
        ) from None
