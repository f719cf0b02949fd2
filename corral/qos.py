"""Requests, limits and QoS classes (docs/scheduling.md, "Requests, limits and QoS classes").

A task's ``resources`` are its **request**: what the allocator charges and what placement
counts. Its optional **limits** (cpus and mem; 0 means none) are upper bounds at or above the
request: the agent kills a task whose memory passes its limit (TASK_FAILED, reason
MEMORY_LIMIT). Requests and limits decide the task's **QoS class**, by Kubernetes' rule:

- ``Guaranteed``: cpus and mem both requested, and both limited to exactly the request;
- ``BestEffort``: neither cpus nor mem requested, and no limit;
- ``Burstable``: anything else (a request with a higher limit, or none).

Unlike Kubernetes, a limit does not fill in a missing request: the request is what a framework
asked to be charged for, so a task with limits and no request is Burstable and charged nothing.

The agent ranks eviction victims with these (``corral.agent.core.eviction``), the master keeps
BestEffort work off agents under memory pressure (``rules/pressure.py``), and the views show
the class. Shared by the master, the agent and the CLI: kernel only, no IO.
"""

from __future__ import annotations

from enum import StrEnum

# Two quantities closer than this are equal (float noise from the wire): the one tolerance.
from corral.resources import EPSILON


class QosClass(StrEnum):
    GUARANTEED = "Guaranteed"
    BURSTABLE = "Burstable"
    BESTEFFORT = "BestEffort"


def qos_class(cpus: float, mem: float, cpus_limit: float = 0.0, mem_limit: float = 0.0) -> QosClass:
    """The class of a task requesting ``cpus`` and ``mem`` with these limits (0: none)."""
    if cpus <= EPSILON and mem <= EPSILON and cpus_limit <= EPSILON and mem_limit <= EPSILON:
        return QosClass.BESTEFFORT
    if (
        cpus > EPSILON
        and mem > EPSILON
        and abs(cpus_limit - cpus) <= EPSILON
        and abs(mem_limit - mem) <= EPSILON
    ):
        return QosClass.GUARANTEED
    return QosClass.BURSTABLE


def is_besteffort(cpus: float, mem: float) -> bool:
    """No cpus and no mem requested: the placement rules' BestEffort work (a demand's shape
    has no limits, so its request alone decides)."""
    return cpus <= EPSILON and mem <= EPSILON


def limits_problem(cpus: float, mem: float, cpus_limit: float, mem_limit: float) -> str:
    """Why these limits are not valid for this request ("" when they are): a limit that is
    set (> 0) must be at or above its request."""
    for name, request, limit in (("cpus", cpus, cpus_limit), ("mem", mem, mem_limit)):
        if limit > EPSILON and limit + EPSILON < request:
            return f"its {name} limit {limit:g} is below its {name} request {request:g}"
    return ""
