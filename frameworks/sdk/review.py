"""Asking the master whether a principal may do something (``Operator.Review``, Kubernetes'
SubjectAccessReview): what a service asks before it takes a tenant's request, so that the
master's ACLs decide for the tenant (docs/security.md, "Services acting for tenants").

``Reviewer(master, tls)`` keeps a detector of the leading master (a ``HOST:PORT`` list or
``zk://``) for a service's lifetime; ``await reviewer.review(subject, framework=..., demands=...,
act_for=..., framework_id=..., submit_to_queue=...)`` is a ``ReviewResult``. A refusal is an
answer, not an error (``allowed`` False, with the rule and the master's message); ``CallError``
means the master could not be asked (UNAVAILABLE, or PERMISSION_DENIED: this service may not
ask about ``subject``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from corral.detector import make_detector, parse_master
from corral.frameworks.sdk.demands import Demand
from corral.frameworks.sdk.leader_calls import call_leader
from corral.tls import Credentials, resolve
from corral.v1.common_pb2 import FrameworkInfo, Principal
from corral.v1.operator_pb2 import ReviewRequest


@dataclass(frozen=True, slots=True)
class ReviewResult:
    allowed: bool
    action: str = ""
    object: str = ""
    rule: str = ""
    message: str = ""


class Reviewer:
    def __init__(self, master: str, tls: Credentials | None = None, timeout: float = 5.0) -> None:
        self.detector = make_detector(parse_master(master))
        self.tls = resolve(tls)
        self.timeout = timeout

    async def review(
        self,
        subject: tuple[str, Iterable[str]],
        *,
        framework: FrameworkInfo | None = None,
        demands: Iterable[Demand] = (),
        act_for: str = "",
        framework_id: str = "",
        quiet: bool = False,
        submit_to_queue: str = "",
    ) -> ReviewResult:
        """May ``subject`` (name, certificate roles) register ``framework``, ask for
        ``demands`` (their classes, tolerations and count x shape against its cap, besides
        what its tasks hold but ``framework_id``'s), act for ``act_for``'s objects, submit jobs
        to queue ``submit_to_queue`` (the ACLs' ``jobs.queues``)? ``quiet``: a question only,
        a refusal not recorded as a Denied event."""
        name, roles = subject
        request = ReviewRequest(
            subject=Principal(name=name, roles=sorted(roles)),
            demands=[d.to_pb() for d in demands],
            act_for=act_for,
            framework_id=framework_id,
            quiet=quiet,
            submit_to_queue=submit_to_queue,
        )
        if framework is not None:
            request.framework.CopyFrom(framework)
        r = await call_leader(self.detector, self.tls, "Review", request, self.timeout)
        return ReviewResult(r.allowed, r.action, r.object, r.rule, r.message)

    async def close(self) -> None:
        await self.detector.close()
