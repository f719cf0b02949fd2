"""``Operator.Review`` (docs/security.md, "Services acting for tenants"): whether a principal
may register a framework, ask for demands, act for another principal's objects in a
service, or submit jobs to a job-service queue, answered by the core's gates
(``authz.review``) against the ACL the master decides with now (reloaded, or a standby's
that took over) and what each principal's tasks hold now. A thin handler: the decision is
the core's.

Who may ask: a principal granted ``Review`` (the ACLs' ``read`` group), or a service about an
owner it may launch for (``launch_for``): what that owner may ask for, and who may act for it;
anyone else is refused PERMISSION_DENIED, counted
and recorded as the guards do. A refusal in the answer is recorded as a Denied event naming
the subject (unless the request is ``quiet``): the audit trail shows what tenants were
refused through a service."""

from __future__ import annotations

from corral import acl as acls
from corral.acl import Denial, Principal
from corral.master.core import authz
from corral.master.core.master import MasterCore
from corral.master.core.records import FrameworkRecord
from corral.master.core.refusals import CallRejected, Denied, Refusal
from corral.master.core.types import Demand, FrameworkSpec
from corral.master.runtime import MasterRuntime
from corral.master.security import audit
from corral.master.security.endpoints import ENDPOINTS
from corral.master.wire.convert import WireError, framework_spec_from_pb
from corral.master.wire.convert_checks import name as checked_name
from corral.master.wire.convert_placement import demand_from_pb
from corral.v1 import operator_pb2


async def for_caller(
    rt: MasterRuntime, caller: Principal, request: operator_pb2.ReviewRequest
) -> operator_pb2.ReviewResponse:
    """The answer; ``CallRejected``: INVALID_ARGUMENT for a request that does not parse,
    ``Denied`` for a caller that may not ask about this subject."""
    subject = Principal(request.subject.name, frozenset(request.subject.roles))
    refused = rt.acl.call(caller, "Review", ENDPOINTS["Review"])
    if refused is not None and _serves(rt, caller, subject.name, request.act_for):
        refused = None
    if refused is not None:
        exc = Denied(refused, caller.name)
        audit.deny(rt, exc, rt.stimulus("denied"))
        raise exc
    if not subject.name:
        raise CallRejected(Refusal.INVALID_ARGUMENT, "review: subject.name is empty")
    try:
        spec: FrameworkSpec | None = None
        if request.HasField("framework"):
            framework = operator_pb2.ReviewRequest().framework
            framework.CopyFrom(request.framework)
            framework.name = framework.name or "review"
            spec = framework_spec_from_pb(framework)
        demands: list[Demand] = [demand_from_pb(d) for d in request.demands]
        if request.submit_to_queue:
            checked_name(request.submit_to_queue, "submit_to_queue")
    except WireError as exc:
        raise CallRejected(Refusal.INVALID_ARGUMENT, f"review: {exc}") from None

    def run(core: MasterCore) -> Denial | None:
        replaced = (0.0, 0.0, 0.0, 0.0)
        fw = core.frameworks.get(request.framework_id) if request.framework_id else None
        if fw is not None and fw.spec.held_by == subject.name:
            replaced = _held(fw)
        return authz.review(
            core.acl,
            subject,
            spec,
            demands,
            request.act_for,
            core.tasks.held,
            replaced,
            submit_to_queue=request.submit_to_queue,
        )

    denial = await rt.query(run)
    if denial is None:
        return operator_pb2.ReviewResponse(allowed=True)
    if not request.quiet:
        audit.deny(rt, Denied(denial, subject.name), rt.stimulus("denied"))
    return operator_pb2.ReviewResponse(
        allowed=False,
        action=denial.action,
        object=denial.object,
        rule=denial.rule,
        message=denial.message,
    )


def _serves(rt: MasterRuntime, caller: Principal, subject: str, act_for: str) -> bool:
    """A service may ask about the owners it may launch for: what they may ask for, and who
    may act for them."""
    owner = act_for or subject
    return rt.acl.delegate(caller, acls.LAUNCH_FOR, owner) is None


def _held(fw: FrameworkRecord) -> tuple[float, float, float, float]:
    """What ``fw``'s live tasks hold."""
    total = [0.0, 0.0, 0.0, 0.0]
    for t in fw.tasks.values():
        if not t.state.terminal:
            for i, v in enumerate(t.spec.resources.scalars()):
                total[i] += v
    return (total[0], total[1], total[2], total[3])
