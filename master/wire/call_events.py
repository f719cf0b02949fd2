"""A framework call's core event, decoded from its request (WireError for what does not
decode). The Scheduler service's unary RPCs and its CALLS stream decode with it, and so does
``corral bench launches`` (master/bench/launches.py), so the bench times the decoding the master
does. A method per kind of call, named as the field of ``Call``'s oneof."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from corral import limits
from corral.master.core import events as ev
from corral.master.wire import convert
from corral.master.wire.convert import WireError
from corral.tasks import TaskReason
from corral.v1 import common_pb2 as pb
from corral.v1 import scheduler_pb2


class Stamps(Protocol):
    """What an event is stamped with: a stimulus id per kind, and the time (MasterRuntime)."""

    @property
    def clock(self) -> Callable[[], float]: ...

    def stimulus(self, kind: str) -> str: ...


def _refuse(filters: scheduler_pb2.Filters) -> float | None:
    return filters.refuse_seconds if filters.HasField("refuse_seconds") else None


def _kill_reason(value: int) -> TaskReason | None:
    """A kill's reason: unset, or a known TaskReason (which the core then limits to
    PREEMPTED, framework_calls.py rule 4)."""
    if value == pb.TASK_REASON_UNSPECIFIED:
        return None
    try:
        return TaskReason(value)
    except ValueError:
        raise WireError(f"reason: unknown task reason {value}") from None


class CallEvents:
    def __init__(self, stamps: Stamps) -> None:
        self._stamps = stamps

    def _fields(self, caller: scheduler_pb2.Caller, kind: str) -> dict[str, Any]:
        if not caller.framework_id:
            raise WireError("caller.framework_id is empty")
        return {
            "stimulus_id": self._stamps.stimulus(kind),
            "now": self._stamps.clock(),
            "framework_id": convert.ident(caller.framework_id, "caller.framework_id"),
            "stream_id": convert.ident(caller.stream_id, "caller.stream_id"),
        }

    def accept(self, request: scheduler_pb2.AcceptRequest) -> ev.Event:
        tasks = convert.accept_tasks(request)  # its errors first, as they always came
        return ev.Accept(
            **self._fields(request.caller, "accept"),
            offer_ids=convert.idents(request.offer_ids, "offer_ids", limits.MAX_OFFERS_PER_CALL),
            tasks=tasks,
            refuse_seconds=_refuse(request.filters),
        )

    def decline(self, request: scheduler_pb2.DeclineRequest) -> ev.Event:
        return ev.Decline(
            **self._fields(request.caller, "decline"),
            offer_ids=convert.idents(request.offer_ids, "offer_ids", limits.MAX_OFFERS_PER_CALL),
            refuse_seconds=_refuse(request.filters),
        )

    def suppress(self, request: scheduler_pb2.SuppressRequest) -> ev.Event:
        return ev.Suppress(**self._fields(request.caller, "suppress"))

    def revive(self, request: scheduler_pb2.ReviveRequest) -> ev.Event:
        return ev.Revive(**self._fields(request.caller, "revive"))

    def kill(self, request: scheduler_pb2.KillRequest) -> ev.Event:
        if not request.task_id:
            raise WireError("task_id is empty")
        return ev.Kill(
            **self._fields(request.caller, "kill"),
            task_id=convert.ident(request.task_id, "task_id"),
            agent_id=convert.ident(request.agent_id, "agent_id"),
            grace_seconds=request.kill_grace_period_seconds,
            reason=_kill_reason(request.reason),
            message=request.message,
        )

    def acknowledge(self, request: scheduler_pb2.AcknowledgeRequest) -> ev.Event:
        return ev.Acknowledge(
            **self._fields(request.caller, "ack"),
            acknowledgements=convert.acknowledgements(request),
        )

    def reconcile(self, request: scheduler_pb2.ReconcileRequest) -> ev.Event:
        convert.count(request.tasks, "tasks to reconcile", limits.MAX_IDS_PER_CALL)
        return ev.Reconcile(
            **self._fields(request.caller, "reconcile"),
            tasks=tuple(
                (
                    convert.ident(t.task_id, "a reconciled task_id"),
                    convert.ident(t.agent_id, "a reconciled agent_id"),
                )
                for t in request.tasks
            ),
        )

    def teardown(self, request: scheduler_pb2.TeardownRequest) -> ev.Event:
        return ev.Teardown(**self._fields(request.caller, "teardown"))

    def set_demands(self, request: scheduler_pb2.SetDemandsRequest) -> ev.Event:
        convert.count(request.demands, "demands", limits.MAX_DEMANDS)
        return ev.SetDemands(
            **self._fields(request.caller, "set-demands"),
            demands=tuple(convert.demand_from_pb(d) for d in request.demands),
        )
