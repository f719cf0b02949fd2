"""Bearer tokens for the master's web page (docs/security.md, "The web page").

A browser has no client certificate: an operator asks the master for a token
(``corral token``, Operator.IssueToken, authenticated by its certificate) and gives it to the
page once (``/login``, which keeps it in a cookie) or to a tool (``Authorization: Bearer``).
A token is the principal it was issued to, with its certificate roles and an expiry, signed by
the master (HMAC-SHA256 with the key from ``--tls-dir``'s token.key, or the local CA's): it
grants what that principal may do, no more, until it expires. Nothing is stored; a key shared
by masters (a highly available set with one --tls-dir) makes a token good on each of them.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import math

from corral.acl import Principal

DEFAULT_TTL = 8 * 3600.0
MAX_TTL = 7 * 24 * 3600.0


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def ttl_of(asked: float) -> float:
    """The lifetime of a token asked for ``asked`` seconds (0: the default); ValueError if
    it is not a number in (0, MAX_TTL]."""
    if asked == 0:
        return DEFAULT_TTL
    if not math.isfinite(asked) or asked < 0 or asked > MAX_TTL:
        raise ValueError(f"ttl_seconds must be in (0, {MAX_TTL:g}], got {asked:g}")
    return asked


def issue(key: bytes, principal: Principal, now: float, ttl: float) -> tuple[str, float]:
    """A token for ``principal`` and when it expires."""
    expires = now + ttl
    body = json.dumps(
        {"n": principal.name, "r": sorted(principal.roles), "e": expires}, separators=(",", ":")
    ).encode()
    mac = hmac.new(key, body, hashlib.sha256).digest()
    return f"{_b64(body)}.{_b64(mac)}", expires


def verify(key: bytes, token: str, now: float) -> Principal | None:
    """The principal of a valid, unexpired token signed with ``key``; None otherwise."""
    body_text, sep, mac_text = token.strip().partition(".")
    if not sep or len(token) > 4096:
        return None
    try:
        body, mac = _unb64(body_text), _unb64(mac_text)
    except (ValueError, TypeError):
        return None
    if not hmac.compare_digest(mac, hmac.new(key, body, hashlib.sha256).digest()):
        return None
    try:
        data = json.loads(body)
        name, roles, expires = str(data["n"]), frozenset(map(str, data["r"])), float(data["e"])
    except (ValueError, KeyError, TypeError):
        return None
    if not name or expires <= now:
        return None
    return Principal(name, roles)
