"""The FrameworkInfo a shipped framework (batch, gang, serving) subscribes with, made in one
place from what its work asks for.

- Work that asks for GPUs gets the ``GPU_RESOURCES`` capability: without it the master offers
  no agent with GPUs (``--filter-gpu-resources``, Mesos' rule), and a GPU task waits forever
  (issue #40, defect 5). The user never sets the capability by hand.
- Its tolerations and node constraints are the framework's (``FrameworkInfo.tolerations``,
  ``offer_constraints``): the master offers it tainted agents it tolerates, and only agents
  that pass the constraints. Its demands carry the same (for why-pending, gang bundles and
  preemption), which the frameworks set themselves.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from corral.frameworks import sdk

GPU_RESOURCES = sdk.FrameworkCapability.FRAMEWORK_CAPABILITY_GPU_RESOURCES
REVOCABLE_RESOURCES = sdk.FrameworkCapability.FRAMEWORK_CAPABILITY_REVOCABLE_RESOURCES


def framework_info(
    name: str,
    role: str,
    *,
    gpus: bool = False,
    revocable: bool = False,
    tolerations: Iterable[sdk.Toleration] = (),
    constraints: Iterable[sdk.Constraint] = (),
    **fields: Any,
) -> sdk.FrameworkInfo:
    """``gpus``: some of its work asks for GPUs; ``revocable``: it fills revocable offers too;
    ``fields``: the rest of FrameworkInfo (``id``, ``failover_timeout``, ...)."""
    capabilities = [GPU_RESOURCES] if gpus else []
    if revocable:
        capabilities.append(REVOCABLE_RESOURCES)
    return sdk.FrameworkInfo(
        name=name,
        role=role,
        capabilities=capabilities,
        tolerations=[t.to_pb() for t in tolerations],
        offer_constraints=[c.to_pb() for c in constraints],
        **fields,
    )
