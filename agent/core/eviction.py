"""Which tasks an agent under memory pressure gives up, and in what order: pure.

The rules (kubelet's ranking for memory, with Mesos' revocable tasks in front):
1. Revocable tasks go first: they run on resources lent by others, and those are taken back
   before any task of its own is touched (reason REVOCABLE_RESOURCES_RECLAIMED).
2. Then tasks using more memory than they requested: a BestEffort task always does (its
   request is 0), a Burstable one when it grew past its request. Among them the lowest
   priority (its class's value) goes first, then the one furthest over its request.
3. Then Burstable tasks within their request, lowest priority first, then the biggest.
4. Guaranteed tasks last, lowest priority first, then the biggest.
5. Ties go to the task id, so the same candidates always give the same victims (a run
   replays).

Victims are taken in that order until what they use covers what must be freed; at least one
when anything must be. Among equal priorities a BestEffort task therefore goes before a
Burstable one over its request only if it uses more over its request; a BestEffort task of a
higher class goes after a lower class's. That is kubelet's rule, and why giving batch work a
low priority class (not only requests) is what keeps serving running under pressure
(docs/scenarios.md, besteffort-thrash).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from corral.qos import QosClass


@dataclass(frozen=True, slots=True)
class EvictionCandidate:
    task_id: str
    qos: QosClass
    priority: int  # its class's value: lower goes first
    request_mem: float  # MiB requested
    usage_mem: float  # MiB used, as last measured
    revocable: bool = False
    framework_id: str = ""  # with task_id, the task's key on the agent

    @property
    def over_request(self) -> float:
        return self.usage_mem - self.request_mem


def tier(c: EvictionCandidate) -> int:
    """Rules 1-4: 0 revocable, 1 over its request, 2 within it, 3 Guaranteed."""
    if c.revocable:
        return 0
    if c.qos is QosClass.GUARANTEED:
        return 3
    return 1 if c.qos is QosClass.BESTEFFORT or c.over_request > 0 else 2


def rank(candidates: Iterable[EvictionCandidate]) -> list[EvictionCandidate]:
    """The candidates in eviction order (first is evicted first)."""

    def key(c: EvictionCandidate) -> tuple[int, int, float, str, str]:
        t = tier(c)
        size = c.over_request if t <= 1 else c.usage_mem
        return (t, c.priority, -size, c.task_id, c.framework_id)

    return sorted(candidates, key=key)


def select(candidates: Sequence[EvictionCandidate], need_mib: float) -> list[EvictionCandidate]:
    """Victims, in order, whose usage adds up to at least ``need_mib`` (all of them if it
    never does); none when nothing must be freed. A task measured at no memory frees
    nothing and is passed over."""
    if need_mib <= 0:
        return []
    out: list[EvictionCandidate] = []
    freed = 0.0
    for c in rank(candidates):
        if c.usage_mem <= 0:
            continue
        out.append(c)
        freed += c.usage_mem
        if freed >= need_mib:
            break
    return out
