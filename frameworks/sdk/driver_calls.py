"""The calls a framework makes through its ``Driver`` (launch, decline, suppress, revive,
set_demands, kill, reconcile, teardown): each builds its request and sends it with the
driver's one way of calling (the CALLS stream, or unary RPCs on an older master)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Any

import grpc

from corral.frameworks.sdk.calls import CallStream, StreamUnimplemented
from corral.frameworks.sdk.demands import Demand
from corral.frameworks.sdk.errors import CallError, NotSubscribedError
from corral.frameworks.sdk.logs import get_logger
from corral.v1.common_pb2 import TASK_REASON_PREEMPTED, Offer, TaskInfo
from corral.v1.scheduler_pb2 import (
    AcceptRequest,
    Acknowledgement,
    AcknowledgeRequest,
    Caller,
    DeclineRequest,
    Filters,
    KillRequest,
    ReconcileRequest,
    ReconcileTask,
    ReviveRequest,
    SetDemandsRequest,
    SuppressRequest,
    TeardownRequest,
)
from corral.v1.scheduler_pb2_grpc import SchedulerStub

log = get_logger("corral.frameworks.sdk")


class DriverCalls:
    """What the calls need of their driver (``Driver`` provides it)."""

    _live: dict[str, str]  # task id -> agent id, of the tasks launched and not ended
    _demands: list[Demand] | None
    _tearing_down: bool
    _stub: SchedulerStub | None
    _calls: CallStream | None
    _call_timeout: float
    _unary_only: bool
    _framework_id: str
    _stream_id: str
    _acks: dict[tuple[str, bytes], Acknowledgement]
    _suppressed: bool | None  # the framework's last suppress() or revive(); None: neither
    _acker: asyncio.Task[None] | None

    async def stop(self) -> None:
        raise NotImplementedError

    @staticmethod
    def _filters(refuse_seconds: float | None) -> Filters:
        return Filters() if refuse_seconds is None else Filters(refuse_seconds=refuse_seconds)

    async def launch(
        self,
        offers: Sequence[Offer | str],
        tasks: Sequence[TaskInfo],
        refuse_seconds: float | None = None,
    ) -> None:
        """Accept ``offers`` (all of one agent, or all the offers of one gang) and launch
        ``tasks`` on their combined resources; what the tasks leave unused returns to the pool
        under the refuse filter.

        Tasks without an agent id get the offers' agent. A gang's offers may span agents: then
        every task names its agent (``sdk.place_gang`` does it), or this raises ``ValueError``
        before calling the master. The caller's messages are not modified. With no tasks this
        is a decline (of a whole gang, if the offers are one).
        """
        offer_ids = [o if isinstance(o, str) else o.id for o in offers]
        if not tasks:
            await self.decline(offer_ids, refuse_seconds)
            return
        agents = {o.agent_id for o in offers if not isinstance(o, str)}
        agent_id = agents.pop() if len(agents) == 1 else ""
        if len(agents) > 1:  # a gang's offers: the master needs each task's agent
            unnamed = [t.task_id for t in tasks if not t.agent_id]
            if unnamed:
                raise ValueError(
                    f"the offers span agents (a gang's), so each task names its agent: "
                    f"{', '.join(unnamed[:3])} do not (sdk.place_gang assigns them)"
                )
        request = AcceptRequest(
            caller=self._caller("Accept"),
            offer_ids=offer_ids,
            filters=self._filters(refuse_seconds),
        )
        # Each task is copied once, into the request (copies built apart were copied again).
        launched = request.operations.add().launch.tasks
        for t in tasks:
            c = launched.add()
            c.CopyFrom(t)
            if not c.agent_id:
                c.agent_id = agent_id
        await self._unary("Accept", request)
        for c in launched:
            self._live.setdefault(c.task_id, c.agent_id)

    async def decline(
        self, offers: Sequence[Offer | str], refuse_seconds: float | None = None
    ) -> None:
        """Decline offers; their agents are not offered again for ``refuse_seconds`` (None:
        the master's default, 0: next allocation cycle)."""
        offer_ids = [o if isinstance(o, str) else o.id for o in offers]
        if not offer_ids:
            return
        request = DeclineRequest(
            caller=self._caller("Decline"),
            offer_ids=offer_ids,
            filters=self._filters(refuse_seconds),
        )
        await self._unary("Decline", request)

    async def suppress(self) -> None:
        """Ask for no more offers until ``revive()``. The driver keeps the wish: after a
        re-subscription (a new leading master knows nothing of it) it is told again, and one
        made while not subscribed (which raises ``NotSubscribedError``) takes effect when the
        driver subscribes."""
        self._suppressed = True
        await self._unary("Suppress", SuppressRequest(caller=self._caller("Suppress")))

    async def revive(self) -> None:
        """Ask for offers again and clear every refuse filter (kept as ``suppress`` is)."""
        self._suppressed = False
        await self._unary("Revive", ReviveRequest(caller=self._caller("Revive")))

    async def set_demands(self, demands: Iterable[Demand]) -> None:
        """Tell the master what this framework still needs, replacing what it said before; an
        empty list withdraws every demand. From the first call on, the master offers this
        framework resources only while a demand is unmet (tasks launched with
        ``task(..., demand=NAME)`` count toward NAME while they live), highest priority class
        first. A bad list raises CallError (INVALID_ARGUMENT, naming the demand)."""
        wanted = list(demands)
        request = SetDemandsRequest(
            caller=self._caller("SetDemands"), demands=[d.to_pb() for d in wanted]
        )
        await self._unary("SetDemands", request)
        self._demands = wanted  # told again after a re-subscription (a restarted master)

    async def kill(
        self,
        task_id: str,
        agent_id: str = "",
        grace: float | None = None,
        *,
        preempted: str | None = None,
    ) -> None:
        """Kill a task: SIGTERM, ``grace`` seconds (None: the task's or agent's default), then
        SIGKILL. The outcome arrives as a status (KILLED, or a terminal state it reached).
        ``preempted``: the framework preempts its own task, and says for whom (at most 1024
        characters; "reclaimed by queue team-b"): its KILLED status carries reason PREEMPTED
        and this message, in ``corral describe task`` and a Preempted event."""
        request = KillRequest(
            caller=self._caller("Kill"),
            task_id=task_id,
            agent_id=agent_id,
            kill_grace_period_seconds=grace or 0.0,
        )
        if preempted is not None:
            request.reason = TASK_REASON_PREEMPTED
            request.message = preempted
        await self._unary("Kill", request)

    async def reconcile(self, tasks: Iterable[tuple[str, str]] = ()) -> None:
        """Ask the master for the state of (task_id, agent_id) pairs, or of every task of the
        framework when empty. Answers arrive as statuses with reason RECONCILIATION."""
        request = ReconcileRequest(
            caller=self._caller("Reconcile"),
            tasks=[ReconcileTask(task_id=t, agent_id=a) for t, a in tasks],
        )
        await self._unary("Reconcile", request)

    async def teardown(self) -> None:
        """End the framework for good: the master kills its tasks and forgets it. The driver
        stops and ``wait()`` returns."""
        request = TeardownRequest(caller=self._caller("Teardown"))
        self._tearing_down = True
        try:
            await self._unary("Teardown", request)
        except BaseException:
            self._tearing_down = False
            raise
        await self.stop()

    async def _ack_loop(self) -> None:
        while self._acks:
            batch, self._acks = list(self._acks.values()), {}
            await self._acknowledge(batch)

    async def _drain_acks(self) -> None:
        acker = self._acker
        if acker is not None and not acker.done() and acker is not asyncio.current_task():
            await asyncio.wait({acker}, timeout=self._call_timeout)

    async def _acknowledge(self, acks: list[Acknowledgement]) -> None:
        try:
            request = AcknowledgeRequest(caller=self._caller("Acknowledge"), acknowledgements=acks)
            # Quiet (on the CALLS stream): nothing waits on an acknowledgement's success, so
            # only a refusal is answered, and told to the same warning as a failed call.
            await self._unary(
                "Acknowledge", request, on_refused=partial(self._not_acknowledged, len(acks))
            )
        except CallError as err:
            self._not_acknowledged(len(acks), err)

    def _not_acknowledged(self, count: int, err: CallError) -> None:
        if self._tearing_down:
            return  # the master forgot the framework and its statuses: nothing to ack
        # Harmless: the master resends unacknowledged statuses, and we ack them then.
        log.warning("acknowledgements not sent", count=count, error=str(err))

    def _caller(self, method: str) -> Caller:
        if self._stub is None:
            raise NotSubscribedError(method)
        return Caller(framework_id=self._framework_id, stream_id=self._stream_id)

    async def _unary(
        self,
        method: str,
        request: Any,
        on_refused: Callable[[CallError], None] | None = None,
    ) -> None:
        """Make a call: on the CALLS stream, as a unary RPC on an older master. With
        ``on_refused``, a quiet call on the stream (``CallStream.call``)."""
        stub = self._stub
        if stub is None:
            raise NotSubscribedError(method)
        calls = self._calls
        if calls is not None and calls.broken and not calls.unimplemented:
            # The CALLS stream failed under a healthy subscription (the calls waiting on it
            # got its error): the next call opens a new one rather than fail forever.
            calls.abandon()
            calls = self._calls = CallStream(stub)
        if calls is not None:
            try:
                await calls.call(
                    method, _call_field(method), request, self._call_timeout, on_refused
                )
                return
            except StreamUnimplemented:
                self._unary_only = True  # an older master: unary calls from now on
        try:
            await getattr(stub, method)(request, timeout=self._call_timeout)
        except grpc.aio.AioRpcError as err:
            raise CallError(method, err.code(), err.details() or "") from None
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # we are being cancelled
            # The call, not the caller, was cancelled: its channel closed under it.
            raise CallError(method, grpc.StatusCode.CANCELLED, "the connection closed") from None


def _call_field(method: str) -> str:
    """The CALLS stream's oneof field of a call: "SetDemands" -> "set_demands"."""
    return "".join("_" + c.lower() if c.isupper() else c for c in method).lstrip("_")
