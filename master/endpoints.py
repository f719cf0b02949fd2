"""The operator endpoints, as the ACLs name them: every Operator RPC by its name, with the
group an ACL may grant it by (``read``, ``write``), and the HTTP routes that do the same thing
under the same name. One table keyed by RPC and route: a new operator endpoint is one row here
(an RPC the table does not list is refused to everyone; tests/unit/test_endpoints.py checks
that every RPC of the Operator service and every HTTP route is listed).
"""

from __future__ import annotations

from typing import Final

from corral.acl import READ, WRITE

# RPC name -> group. The gRPC guard (rpc.py) and the HTTP middleware (http_auth.py) look here.
ENDPOINTS: Final[dict[str, str]] = {
    "GetState": READ,
    "Watch": READ,
    "GetEvents": READ,
    "Explain": READ,
    "GetRoles": READ,
    "GetPriorityClasses": READ,
    "GetMetrics": READ,  # HTTP only: /metrics
    # A token acts as the principal it is issued to, no more: reading is enough to ask one.
    "IssueToken": READ,
    "SetWeight": WRITE,
    "SetQuota": WRITE,
    "SetPriorityClass": WRITE,
    "DeletePriorityClass": WRITE,
}

PUBLIC: Final = ""  # a route anyone may ask, with no credential (liveness, the login form)

# (method, route as aiohttp's canonical form) -> endpoint name, or PUBLIC.
HTTP_ROUTES: Final[dict[tuple[str, str], str]] = {
    ("GET", "/health"): PUBLIC,
    ("GET", "/login"): PUBLIC,
    ("POST", "/login"): PUBLIC,
    ("GET", "/"): "GetState",
    ("GET", "/api/v1/state"): "GetState",
    ("GET", "/api/v1/events"): "GetEvents",
    ("GET", "/api/v1/frameworks/{framework_id}/explain"): "Explain",
    ("GET", "/api/v1/roles"): "GetRoles",
    ("PUT", "/api/v1/roles/{role}/weight"): "SetWeight",
    ("PUT", "/api/v1/roles/{role}/quota"): "SetQuota",
    ("DELETE", "/api/v1/roles/{role}/quota"): "SetQuota",
    ("GET", "/api/v1/priorityclasses"): "GetPriorityClasses",
    ("PUT", "/api/v1/priorityclasses/{name}"): "SetPriorityClass",
    ("DELETE", "/api/v1/priorityclasses/{name}"): "DeletePriorityClass",
    ("GET", "/metrics"): "GetMetrics",
}


def group_of(endpoint: str) -> str | None:
    """The endpoint's group; None for a name the table does not list (refused)."""
    return ENDPOINTS.get(endpoint)
