"""Who is calling: the principal of a gRPC call or an HTTP request, from the verified client
certificate only (never from a message field). A certificate's common name is the principal,
its ``corral:ROLE`` organizations its certificate roles (corral/pki.py).

gRPC has checked the certificate against the CA in the handshake (client certificates are
required); its auth context carries the certificate, parsed once per distinct certificate. A
plain-text master (``--insecure``) has no principals: every caller is ``ANONYMOUS``.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from corral import pki
from corral.acl import ANONYMOUS, Principal
from corral.tls import peer_roles


@lru_cache(maxsize=4096)
def _from_pem(pem: bytes) -> Principal:
    who = pki.identity(pem)
    return Principal(who.name, who.roles)


def principal_of(context: Any) -> Principal:
    """The principal of a gRPC call (``grpc.aio.ServicerContext``)."""
    try:
        auth = context.auth_context()
    except Exception:  # a context without one (a test double): no identity
        return ANONYMOUS
    pems = auth.get("x509_pem_cert") if auth else None
    if not pems:
        return ANONYMOUS
    try:
        return _from_pem(bytes(pems[0]))
    except pki.CertError:
        return ANONYMOUS  # verified by the CA, yet no CN: it names nobody


def principal_of_peer(peercert: dict[str, Any] | None) -> Principal:
    """The principal of a TLS peer as ``ssl`` decodes its verified certificate."""
    name, roles = peer_roles(peercert)
    return Principal(name, roles) if name else ANONYMOUS
