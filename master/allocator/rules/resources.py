"""Resources fit: an offer is made only of what is free and allocatable (Mesos'
--min_allocatable_resources); a demand's task fits an agent when every resource it asks for is
free there: ``corral.resources.fits``, the one fit test (the kernel's, shared with the core
and the SDK).

An offer rule: the walk kernels offer an agent's free resources when allocatable; its array
operation is the fit test over many agents at once, a resource at a time
(``corral.resources.covers_array``: rooms and the why-pending scan)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from corral.master.allocator.rules.base import Scope
from corral.resources import covers_array

REASON_NO_FREE = "no free resources"


def insufficient(resource: str) -> str:
    return f"insufficient {resource}"


class Resources:
    name = "resources"
    reasons = (REASON_NO_FREE, insufficient("cpus"))
    scope: Scope = "offer"
    array_form: Callable[..., Any] = staticmethod(covers_array)


RULE = Resources()
