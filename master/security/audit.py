"""The audit trail of refusals: a call refused by the ACLs or for an identity (the core's
``Denied``, or the shell's operator-endpoint guard) is counted (``corral_denied_total{action}``)
and kept as a cluster event with reason Denied, the trail ``corral events --reason Denied``
shows (docs/security.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from corral import events as cluster_events
from corral.master.core import commands as cmd
from corral.master.core.refusals import Denied

if TYPE_CHECKING:
    from corral.master.runtime import MasterRuntime


def deny(runtime: MasterRuntime, exc: Denied, stimulus_id: str) -> None:
    d = exc.denial
    runtime.metrics.denied.labels(d.action).inc()
    reason, object_kind = cluster_events.KINDS["access_denied"]
    runtime.publish(
        [
            cmd.ClusterEvent(
                stimulus_id=stimulus_id,
                kind="access_denied",
                subject=exc.principal or "(anonymous)",
                message=d.message,
                timestamp=runtime.clock(),
                reason=reason,
                object_kind=object_kind,
            )
        ]
    )
