"""Who asked for an operator's action, as the shell can tell: the seam authentication plugs into.

Until the master authenticates its callers (TLS client certificates), an operator is the address
its call came from and the name it declares: the ``corral-operator`` gRPC metadata (the CLI's
``--as NAME``, default ``$USER``) or the ``X-Corral-Operator`` HTTP header. The name is a claim,
not a proof, and cluster events say so ("operator alice (declared) at ..."). Authentication
replaces ``RequesterSource`` with one that returns the verified principal (``verified=True``);
nothing else changes.
"""

from __future__ import annotations

from typing import Any

from corral.limits import MAX_NAME_LENGTH, echo
from corral.master.core.types import Requester

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
    """Requesters of gRPC and HTTP calls (BadRequester for a name it will not record)."""

    def of_grpc(self, context: Any) -> Requester:
        declared = None
        for key, value in context.invocation_metadata() or ():
            if key == GRPC_METADATA:
                declared = value if isinstance(value, str) else value.decode("utf-8", "replace")
        peer: str = context.peer() or ""
        # grpc names peers "ipv4:127.0.0.1:5555" / "ipv6:[::1]:5555": the address is the rest.
        address = peer.split(":", 1)[1] if peer.startswith(("ipv4:", "ipv6:")) else peer
        return Requester(address=address, name=_declared(declared))

    def of_http(self, request: Any) -> Requester:
        peer = request.transport.get_extra_info("peername") if request.transport else None
        address = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else (request.remote or "")
        return Requester(address=address, name=_declared(request.headers.get(HTTP_HEADER)))
