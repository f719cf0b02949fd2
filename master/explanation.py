"""A framework's explanation (Operator.Explain, ``GET /api/v1/frameworks/{id}/explain``,
`corral explain`, ``sdk.why_pending``) for whoever asks: a principal granted ``Explain`` (the
ACLs' ``read`` group), or the principal that subscribed the framework, without any grant; anyone
else is refused PERMISSION_DENIED (counted and recorded as the guards do), also for a framework
that does not exist (endpoints.owner_denial). A framework may always know why its own demands
wait: the shipped ones ask while their work waits (issue #40, defect 3)."""

from __future__ import annotations

from typing import Any

from corral.acl import Denial, Principal
from corral.master.core.master import MasterCore
from corral.master.core.refusals import Denied
from corral.master.runtime import MasterRuntime
from corral.master.security import audit
from corral.master.security.endpoints import owner_denial


async def for_caller(rt: MasterRuntime, caller: Principal, framework_id: str) -> dict[str, Any]:
    """The core's explain of ``framework_id`` as ``caller`` may see it; ``CallRejected``:
    NOT_FOUND for an unknown framework (to a granted caller), ``Denied``."""
    now = rt.clock()

    def run(core: MasterCore) -> tuple[Denial | None, dict[str, Any] | None]:
        fw = core.frameworks.get(framework_id)
        denial = owner_denial(rt.acl, caller, "Explain", fw.spec.principal if fw else None)
        if denial is not None:
            return denial, None  # not even computed for a caller who may not see it
        return None, core.explain(framework_id, now)

    denial, data = await rt.query(run)
    if data is not None:
        return data
    assert denial is not None
    refused = Denied(denial, caller.name)
    audit.deny(rt, refused, rt.stimulus("denied"))
    raise refused
