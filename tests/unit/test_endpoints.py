"""master/security/endpoints.py lists every operator endpoint: each Operator RPC and each
HTTP route of the master, so that the ACLs can name them (an endpoint not listed is refused
to everyone)."""

from __future__ import annotations

from corral.acl import LOGS, READ, WRITE
from corral.master.http.routes import build_app
from corral.master.runtime import MasterRuntime
from corral.master.security.endpoints import ENDPOINTS, HTTP_ROUTES, PUBLIC
from corral.v1 import operator_pb2


def test_every_operator_rpc_is_in_the_table_with_a_group() -> None:
    rpcs = {m.name for m in operator_pb2.DESCRIPTOR.services_by_name["Operator"].methods}
    assert rpcs <= set(ENDPOINTS), (
        f"add these to master/security/endpoints.py: {rpcs - set(ENDPOINTS)}"
    )
    assert set(ENDPOINTS.values()) <= {READ, WRITE, LOGS}


def test_every_http_route_is_in_the_table() -> None:
    from corral.master.allocator import make_allocator
    from corral.master.core.config import MasterConfig

    app = build_app(MasterRuntime(MasterConfig(), make_allocator("numpy")))
    routes = {
        (r.method, r.resource.canonical)
        for r in app.router.routes()
        if r.method != "HEAD" and r.resource is not None
    }
    missing = routes - set(HTTP_ROUTES)
    assert not missing, f"add these to master/security/endpoints.py's HTTP_ROUTES: {missing}"
    for endpoint in HTTP_ROUTES.values():
        assert endpoint == PUBLIC or endpoint in ENDPOINTS


def test_owner_routes_are_routes_of_owner_endpoints_and_the_rest_are_guarded() -> None:
    from corral.acl import Principal, acl_from_data
    from corral.master.security.endpoints import OWNER_MAY, OWNER_ROUTES, guard_denial, owner_denial

    for route in OWNER_ROUTES:
        assert HTTP_ROUTES[route] in OWNER_MAY, route
    acl = acl_from_data({"rules": [{"name": "b", "principals": ["batch"], "frameworks": {}}]}, "t")
    batch = Principal("batch", "framework")
    # Explain passes the guard (its handler checks the owner) on gRPC and on its own route ...
    assert guard_denial(acl, batch, "Explain") is None
    own = ("GET", "/api/v1/frameworks/{framework_id}/explain")
    assert guard_denial(acl, batch, "Explain", own) is None
    # ... but not every framework's pending demands.
    assert guard_denial(acl, batch, "Explain", ("GET", "/api/v1/pending")) is not None
    # The handler: the owner may, nobody else, and not for a framework that does not exist.
    assert owner_denial(acl, batch, "Explain", "batch") is None
    assert owner_denial(acl, batch, "Explain", "inference") is not None
    assert owner_denial(acl, batch, "Explain", None) is not None
