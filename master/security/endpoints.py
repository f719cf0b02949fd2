"""The operator endpoints, as the ACLs name them: every Operator RPC by its name, with the
group an ACL may grant it by (``read``, ``write``), and the HTTP routes that do the same thing
under the same name. One table keyed by RPC and route: a new operator endpoint is one row here
(an RPC the table does not list is refused to everyone; tests/unit/test_endpoints.py checks
that every RPC of the Operator service and every HTTP route is listed).
"""

from __future__ import annotations

from typing import Final

from corral.acl import LOGS, READ, WRITE, Acl, Denial, Principal

# RPC name -> group. The gRPC guard (rpc.py) and the HTTP middleware (http_auth.py) look here.
ENDPOINTS: Final[dict[str, str]] = {
    "GetState": READ,
    # GetState's lists a page at a time (state_pages.py).
    "ListAgents": READ,
    "ListFrameworks": READ,
    "ListTasks": READ,
    "ListOffers": READ,
    "Watch": READ,
    "GetEvents": READ,
    "Explain": READ,
    "GetRoles": READ,
    "GetPriorityClasses": READ,
    "GetMetrics": READ,  # HTTP only: /metrics
    # A token acts as the principal it is issued to, no more: reading is enough to ask one.
    "IssueToken": READ,
    "ReadTaskFile": LOGS,  # corral logs: a task's sandbox files, through its agent
    # Would the master let a principal do this (review.py)? A service may also ask about the
    # principals it may launch for without the grant (OWNER_MAY).
    "Review": READ,
    # The autoscaler's what-if (what_if.py): reads the state, changes nothing.
    "Simulate": READ,
    # What services publish for the web UI (service_status.py), and reading it back.
    "GetServiceStatuses": READ,
    "SetWeight": WRITE,
    "SetQuota": WRITE,
    "SetPriorityClass": WRITE,
    "DeletePriorityClass": WRITE,
    # Operators' actions (docs/operations.md, "Operating tasks and agents").
    "KillTasks": WRITE,
    "TeardownFramework": WRITE,
    "Cordon": WRITE,
    "Uncordon": WRITE,
    "Drain": WRITE,
    "DeleteAgent": WRITE,
    # A service's own grant, apart from the write group: publishing its status changes nothing
    # the cluster decides with (the built-in ACL gives it to frameworks' certificates).
    "PublishStatus": WRITE,
}

# Endpoints a principal may call on the frameworks it subscribed, and their tasks, without a
# grant: the guards let an ungranted call through and the handler refuses it unless the object
# is the caller's (``owner_denial``), with the same denial. ReadTaskFile: a task's output is its
# owner's (task_files.py). Explain: why its own demands wait is the framework's to know (it
# sees the same agents in its offers); the shipped frameworks ask it while their work waits.
# Review: a service asks about the principals it may launch for (review.py).
OWNER_MAY: Final = frozenset({"ReadTaskFile", "Explain", "Review"})
# The HTTP routes of OWNER_MAY endpoints whose handlers check the owner. Any other route of such
# an endpoint is guarded as usual: /api/v1/pending (every framework's pending demands) is an
# Explain for those granted it only.
OWNER_ROUTES: Final = frozenset(
    {
        ("GET", "/api/v1/frameworks/{framework_id}/explain"),
        ("GET", "/api/v1/tasks/{task_id}/files/{path}"),
    }
)

PUBLIC: Final = ""  # a route anyone may ask, with no credential (liveness, the login form)

# (method, route as aiohttp's canonical form) -> endpoint name, or PUBLIC.
HTTP_ROUTES: Final[dict[tuple[str, str], str]] = {
    ("GET", "/health"): PUBLIC,
    ("GET", "/login"): PUBLIC,
    ("POST", "/login"): PUBLIC,
    ("POST", "/logout"): PUBLIC,
    ("GET", "/api/v1/whoami"): PUBLIC,  # the caller about itself (http_auth.py)
    ("GET", "/"): "GetState",
    ("GET", "/api/v1/state"): "GetState",
    ("GET", "/api/v1/state/agents"): "ListAgents",
    ("GET", "/api/v1/state/frameworks"): "ListFrameworks",
    ("GET", "/api/v1/state/tasks"): "ListTasks",
    ("GET", "/api/v1/state/offers"): "ListOffers",
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
    ("POST", "/api/v1/simulate"): "Simulate",
    ("GET", "/api/v1/services/status"): "GetServiceStatuses",
    ("PUT", "/api/v1/services/{service}/status/{kind}"): "PublishStatus",
    ("GET", "/plain"): "GetState",
    # Operators' actions and tasks' files (http_actions.py).
    ("POST", "/api/v1/tasks/kill"): "KillTasks",
    ("POST", "/api/v1/frameworks/{framework_id}/teardown"): "TeardownFramework",
    ("POST", "/api/v1/agents/{agent_id}/cordon"): "Cordon",
    ("POST", "/api/v1/agents/{agent_id}/uncordon"): "Uncordon",
    ("POST", "/api/v1/agents/{agent_id}/drain"): "Drain",
    ("DELETE", "/api/v1/agents/{agent_id}"): "DeleteAgent",
    ("GET", "/api/v1/tasks/{task_id}/files/{path}"): "ReadTaskFile",
    # The web UI (master/ui): its files carry no data; its views are the state's and events'.
    ("GET", "/ui/static"): PUBLIC,
    ("GET", "/api/v1/cluster"): "GetState",
    ("GET", "/api/v1/cluster/samples"): "GetState",
    ("GET", "/api/v1/agents"): "GetState",
    ("GET", "/api/v1/agents/{agent_id}"): "GetState",
    ("GET", "/api/v1/tasks"): "GetState",
    ("GET", "/api/v1/tasks/{task_id}"): "GetState",
    ("GET", "/api/v1/frameworks"): "GetState",
    ("GET", "/api/v1/frameworks/{framework_id}"): "GetState",
    ("GET", "/api/v1/pending"): "Explain",
    ("GET", "/api/v1/stream"): "GetEvents",
}


def guard_denial(
    acl: Acl, principal: Principal, endpoint: str, route: tuple[str, str] | None = None
) -> Denial | None:
    """What the gRPC guard and the HTTP middleware refuse before a handler runs: an endpoint
    the table does not list, or one not granted to ``principal``. An OWNER_MAY endpoint passes
    (over HTTP, on its OWNER_ROUTES only): its handler decides, knowing the object
    (``owner_denial``)."""
    group = ENDPOINTS.get(endpoint)
    if group is None:
        return acl.unlisted(principal, endpoint)
    if endpoint in OWNER_MAY and (route is None or route in OWNER_ROUTES):
        return None
    return acl.call(principal, endpoint, group)


def owner_denial(acl: Acl, principal: Principal, endpoint: str, owner: str | None) -> Denial | None:
    """What an OWNER_MAY endpoint's handler refuses, knowing its object: a principal granted
    the endpoint may call it; so may ``owner``, the principal that subscribed the object's
    framework (None: there is no such object); anyone else is refused with the ACL's denial,
    also for an object that does not exist, so an ungranted caller learns nothing of other
    tenants' ids. (A plain-text master has no principals: its ACL grants everything.)"""
    denial = acl.call(principal, endpoint, ENDPOINTS[endpoint])
    if denial is None or (owner is not None and principal.name and owner == principal.name):
        return None
    return denial
