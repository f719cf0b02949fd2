"""HTTP Basic authentication as Mesos does it: ``--mesos-credentials FILE`` in Mesos'
``--credentials`` format, and the principal a request's ``Authorization`` header proves.

The file is JSON, ``{"credentials": [{"principal": "ml", "secret": "..."}, ...]}``, or Mesos'
older text format, one ``PRINCIPAL SECRET`` a line. A Corral extension: a credential may name
``"roles"``, the certificate roles its principal has in the ACLs (corral/acl.py), as a
certificate's ``corral:ROLE`` organizations do; by default ``["framework"]``, so a principal
from the file may subscribe frameworks under the builtin ACLs, as any authenticated framework
may under Mesos' default (permissive) ACLs. An ``--acls`` file narrows that per principal.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
from dataclasses import dataclass
from pathlib import Path

from corral.acl import Principal
from corral.acl_rules import CERT_ROLES

DEFAULT_ROLES = ("framework",)


class CredentialsError(ValueError):
    """The credentials file is unreadable or malformed (the message names where)."""


@dataclass(frozen=True, slots=True)
class Credential:
    principal: str
    secret: str
    roles: tuple[str, ...] = DEFAULT_ROLES


class Credentials:
    def __init__(self, entries: list[Credential]) -> None:
        self._by_principal = {c.principal: c for c in entries}

    def __len__(self) -> int:
        return len(self._by_principal)

    def principal_of(self, authorization: str | None) -> Principal | None:
        """The principal a ``Basic`` header proves, or None (no header, another scheme, an
        unknown principal or a wrong secret: all alike to the caller, a 401)."""
        if not authorization:
            return None
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "basic":
            return None
        try:
            decoded = base64.b64decode(token.strip(), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return None
        name, sep, secret = decoded.partition(":")
        if not sep:
            return None
        known = self._by_principal.get(name)
        # Compared in constant time whether or not the principal exists.
        expected = known.secret if known is not None else "\0" + secret
        if not hmac.compare_digest(expected.encode(), secret.encode()) or known is None:
            return None
        return Principal(known.principal, frozenset(known.roles))


def load(path: Path) -> Credentials:
    try:
        text = path.read_text()
    except OSError as exc:
        raise CredentialsError(f"{path}: {exc.strerror or exc}") from None
    entries = _parse(text, str(path))
    if not entries:
        raise CredentialsError(f"{path}: no credentials")
    return Credentials(entries)


def _parse(text: str, where: str) -> list[Credential]:
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            data = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise CredentialsError(f"{where}: not JSON: {exc}") from None
        items = data.get("credentials") if isinstance(data, dict) else None
        if not isinstance(items, list):
            raise CredentialsError(f'{where}: expected {{"credentials": [...]}}')
        return _unique([_entry(item, f"{where}: credentials[{n}]") for n, item in enumerate(items)])
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 2:
            raise CredentialsError(f"{where}:{n}: expected PRINCIPAL SECRET")
        out.append(_entry({"principal": parts[0], "secret": parts[1]}, f"{where}:{n}"))
    return _unique(out)


def _entry(item: object, where: str) -> Credential:
    if not isinstance(item, dict):
        raise CredentialsError(f"{where}: expected an object")
    unknown = set(item) - {"principal", "secret", "roles"}
    if unknown:
        raise CredentialsError(f"{where}: unknown field {sorted(unknown)[0]!r}")
    principal, secret = item.get("principal"), item.get("secret")
    if not isinstance(principal, str) or not principal or ":" in principal:
        raise CredentialsError(f"{where}: principal must be a non-empty string without ':'")
    if not isinstance(secret, str) or not secret:
        raise CredentialsError(f"{where}: secret must be a non-empty string")
    roles = item.get("roles", list(DEFAULT_ROLES))
    if not isinstance(roles, list) or not all(isinstance(r, str) for r in roles):
        raise CredentialsError(f"{where}: roles must be a list of strings")
    bad = [r for r in roles if r not in CERT_ROLES]
    if bad:
        raise CredentialsError(
            f"{where}: unknown role {bad[0]!r}; the roles are {', '.join(sorted(CERT_ROLES))}"
        )
    return Credential(principal, secret, tuple(roles))


def _unique(entries: list[Credential]) -> list[Credential]:
    seen: set[str] = set()
    for c in entries:
        if c.principal in seen:
            raise CredentialsError(f"principal {c.principal!r} appears twice")
        seen.add(c.principal)
    return entries
