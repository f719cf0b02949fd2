"""Who asked for an operator's action, as the shell can tell.

With TLS (the default, docs/security.md) an operator is the principal of its verified client
certificate (or of the token the master issued to one), ``verified=True``, and the address its
call came from; events say "operator admin at ...". On a plain-text master (``--insecure``)
there is no proof: the operator is the address and the name it declares, the
``corral-operator`` gRPC metadata (the CLI's ``--as NAME``, default ``$USER``) or the
``X-Corral-Operator`` HTTP header, and events say so ("operator alice (declared) at ...").
"""

from __future__ import annotations

from typing import Any

from corral.limits import MAX_NAME_LENGTH, echo
from corral.master.core.types import Requester
from corral.master.security.principals import principal_of

GRPC_METADATA = "corral-operator"
HTTP_HEADER = "X-Corral-Operator"


class BadRequester(ValueError):
    """A declared name the master will not record (too long, or not printable)."""


def _declared(name: str | None) -> str:
    if not name:
        return ""
    if len(name) > MAX_NAME_LENGTH or not name.isprintable():
        raise BadRequester(
            f"the operator name {echo(name)} must be printable and at most {MAX_NAME_LENGTH} "
            "characters"
        )
    return name


class RequesterSource:
    """Requesters of gRPC and HTTP calls (BadRequester for a name it will not record), for the
    master ``runtime`` (its token key and clock decide an HTTP request's principal)."""

    def __init__(self, runtime: Any = None) -> None:
        self._runtime = runtime

    def of_grpc(self, context: Any) -> Requester:
        verified = principal_of(context)
        declared = None
        for key, value in context.invocation_metadata() or ():
            if key == GRPC_METADATA:
                declared = value if isinstance(value, str) else value.decode("utf-8", "replace")
        peer: str = context.peer() or ""
        # grpc names peers "ipv4:127.0.0.1:5555" / "ipv6:[::1]:5555": the address is the rest.
        address = peer.split(":", 1)[1] if peer.startswith(("ipv4:", "ipv6:")) else peer
        if verified.name:
            return Requester(address=address, name=verified.name, verified=True)
        return Requester(address=address, name=_declared(declared))

    def of_http(self, request: Any) -> Requester:
        peer = request.transport.get_extra_info("peername") if request.transport else None
        address = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else (request.remote or "")
        if self._runtime is not None:
            from corral.master.security.http_auth import (
                principal_of_http,  # aiohttp: the HTTP shell's
            )

            verified = principal_of_http(self._runtime, request)
            if verified.name:
                return Requester(address=address, name=verified.name, verified=True)
        return Requester(address=address, name=_declared(request.headers.get(HTTP_HEADER)))
