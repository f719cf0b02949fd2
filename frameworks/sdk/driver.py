"""The Driver: one framework's connection to the master.

Two tasks per driver. The *reader* owns the connection: it subscribes, reads the event stream,
watches heartbeats, and reconnects with backoff, re-subscribing with the framework id the
master gave the first time. The *consumer* takes events from a bounded queue and awaits the
scheduler's callbacks one at a time, in order, then acknowledges the statuses that carry a
uuid in one batch per UPDATE. When the consumer is slow the queue fills, the reader stops
reading, and gRPC flow control pushes back to the master: memory stays bounded.

The framework's calls (launch, decline, suppress, revive, set_demands, kill, reconcile,
teardown) are the driver's methods too, sent on the connection the reader holds: one job, the
framework's client of the master (a long file, not two halves of one class).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import random
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Sequence
from functools import partial
from types import TracebackType
from typing import Any, Final

import grpc

from corral.detector import MasterDetector, leader_hint, make_detector, parse_master
from corral.frameworks.sdk.backoff import Backoff
from corral.frameworks.sdk.calls import CallStream, StreamUnimplemented
from corral.frameworks.sdk.demands import Demand
from corral.frameworks.sdk.errors import CallError, ConnectError, FrameworkError, NotSubscribedError
from corral.frameworks.sdk.events import DriverEvent, EventChannel
from corral.frameworks.sdk.logs import ensure_configured, get_logger
from corral.frameworks.sdk.scheduler import Scheduler
from corral.frameworks.sdk.states import TERMINAL_STATES
from corral.tls import Credentials, aio_channel, resolve
from corral.v1.common_pb2 import TASK_REASON_PREEMPTED, FrameworkInfo, Offer, TaskInfo, TaskState
from corral.v1.scheduler_pb2 import (
    AcceptRequest,
    AcknowledgeRequest,
    Caller,
    DeclineRequest,
    Event,
    Filters,
    KillRequest,
    ReconcileRequest,
    ReconcileTask,
    ReviveRequest,
    SetDemandsRequest,
    SubscribeRequest,
    SuppressRequest,
    TeardownRequest,
)
from corral.v1.scheduler_pb2_grpc import SchedulerStub

log = get_logger("corral.frameworks.sdk")

DEFAULT_MASTER: Final = "127.0.0.1:5050"
_MiB: Final = 1 << 20
# The master's limit on one message either way (corral.limits.MAX_MESSAGE_BYTES, which the SDK
# may not import: it depends on the wire contract only). A test holds the two equal.
MAX_MESSAGE_BYTES: Final = 16 * _MiB

# Keepalive pings find a dead peer when the master sends nothing at all; heartbeats (below) are
# the main liveness check. Pings are rare enough not to trip the server's ping-abuse policy.
CHANNEL_OPTIONS: Final[tuple[tuple[str, int], ...]] = (
    ("grpc.keepalive_time_ms", 60_000),
    ("grpc.keepalive_timeout_ms", 20_000),
    ("grpc.http2.max_pings_without_data", 0),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
)

# A subscription refused with one of these will be refused again: stop instead of retrying.
_FATAL_CODES: Final = frozenset(
    {
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.NOT_FOUND,
        # The framework id was removed (teardown, or its failover timeout ran out while it was
        # away): it will never be subscribed again.
        grpc.StatusCode.FAILED_PRECONDITION,
        grpc.StatusCode.PERMISSION_DENIED,
        grpc.StatusCode.UNAUTHENTICATED,
        grpc.StatusCode.UNIMPLEMENTED,
    }
)


class _Marker(enum.Enum):
    DISCONNECTED = "disconnected"


_QueueItem = Event | _Marker


class Driver:
    """Connects a ``Scheduler`` to the master::

        async with Driver(MyScheduler(), FrameworkInfo(name="x", role="*")) as driver:
            await driver.wait()

    or, without a scheduler (``None``), hands the framework its events: see ``events()``.

    Entering subscribes and returns once the master has answered SUBSCRIBED, or raises
    ``ConnectError`` after ``connect_timeout`` seconds (None: keep trying forever). ``wait()``
    returns after ``stop()`` or ``teardown()`` and raises what ended the driver otherwise: an
    exception from a callback, ``FrameworkError`` when the master ends the framework.
    """

    def __init__(
        self,
        scheduler: Scheduler | None,
        framework_info: FrameworkInfo,
        master: str = DEFAULT_MASTER,
        *,
        connect_timeout: float | None = 30.0,
        call_timeout: float = 10.0,
        missed_heartbeats: float = 3.0,
        backoff: Backoff | None = None,
        event_queue_size: int = 64,
        channel_options: Sequence[tuple[str, Any]] = (),
        seed: int | None = None,
        tls: Credentials | None = None,
    ) -> None:
        if event_queue_size < 1:
            raise ValueError("event_queue_size must be >= 1")
        ensure_configured()
        self.master = master
        # Mutual TLS with the credential given, found in the environment or in ~/.corral/tls
        # (corral.tls); NoCredentials (a ValueError) if there is none.
        self.tls = resolve(tls)
        # HOST:PORT, a list of masters, or zk://...: ValueError here for a malformed one.
        self._spec = parse_master(master)
        self._detector: MasterDetector | None = None  # made on entering (a zk one connects)
        self.address = ""  # the master of the current connection
        self._epoch = 0  # the highest leadership epoch subscribed under (fencing)
        self._info = FrameworkInfo()
        self._info.CopyFrom(framework_info)
        self._connect_timeout = connect_timeout
        self._call_timeout = call_timeout
        self._missed_heartbeats = missed_heartbeats
        self._backoff = backoff or Backoff()
        self._rng = random.Random(seed)
        self._options = dict(CHANNEL_OPTIONS) | dict(channel_options)
        self._queue: asyncio.Queue[_QueueItem] = asyncio.Queue(maxsize=event_queue_size)

        self._framework_id = framework_info.id
        self._stream_id = ""
        self._master_id = ""
        self._stub: SchedulerStub | None = None  # set while subscribed
        # Calls go on this stream (see calls.py); it lives as long as the connection's channel,
        # so a call in flight when the subscription ended still gets its answer.
        self._calls: CallStream | None = None
        self._unary_only = False  # the master has no CALLS stream
        self._channel: grpc.aio.Channel | None = None
        self._last_error = "no attempt yet"
        self._first_subscribed = asyncio.Event()
        self._done = asyncio.Event()
        # No scheduler: the framework reads driver.events() instead of overriding callbacks.
        self.scheduler: Scheduler = scheduler if scheduler is not None else EventChannel(self._done)
        self._failure: BaseException | None = None
        self._tearing_down = False
        self._handling = False  # the consumer is inside a callback
        self._reader: asyncio.Task[None] | None = None
        self._consumer: asyncio.Task[None] | None = None
        # Acknowledgements go out from their own task, one call in flight, the rest batched
        # behind it: the next event is dispatched without waiting for a round trip.
        # Acknowledgements not yet sent, by (task id, uuid): a status the master sends again
        # before the first one's acknowledgement left is acknowledged once (the master refuses
        # a call naming one twice, and would send them all again). Kept as (agent id, task id,
        # uuid), made into messages once, inside the call's request (a message per status made
        # and then copied into the request cost twice as much, two per launch).
        self._acks: dict[tuple[str, bytes], tuple[str, str, bytes]] = {}
        self._suppressed: bool | None = None  # told again after each re-subscription
        self._acker: asyncio.Task[None] | None = None
        # Tasks launched and not known to have ended, task id -> agent id: what the driver asks
        # the master about after every (re)subscription (Mesos' explicit reconciliation).
        self._live: dict[str, str] = {}
        self._subscriptions = 0
        self._demands: list[Demand] | None = None  # the last set_demands, once it succeeded

    # -- state ------------------------------------------------------------------------------

    @property
    def framework_id(self) -> str:
        """The id the master assigned (empty before the first subscription)."""
        return self._framework_id

    @property
    def stream_id(self) -> str:
        return self._stream_id

    @property
    def master_id(self) -> str:
        return self._master_id

    @property
    def subscribed(self) -> bool:
        return self._stub is not None

    # -- lifecycle ----------------------------------------------------------------------------

    async def __aenter__(self) -> Driver:
        if self._reader is not None:
            raise RuntimeError("a Driver can be entered only once")
        self._reader = asyncio.create_task(self._guard(self._read_forever()), name="sdk-reader")
        self._consumer = asyncio.create_task(self._guard(self._consume()), name="sdk-consumer")
        subscribed = asyncio.create_task(self._first_subscribed.wait())
        done = asyncio.create_task(self._done.wait())
        try:
            await asyncio.wait(
                {subscribed, done},
                timeout=self._connect_timeout,
                return_when=asyncio.FIRST_COMPLETED,
            )
        except asyncio.CancelledError:
            # Cancelled while connecting (the user pressed Ctrl-C): leave no task running.
            await self._shutdown()
            raise
        finally:
            subscribed.cancel()
            done.cancel()
        if self._first_subscribed.is_set():
            return self
        failure = self._failure
        await self._shutdown()
        if failure is not None:
            raise failure
        raise ConnectError(
            f"could not subscribe to the master at {self.master} within "
            f"{self._connect_timeout:g} s ({self._last_error})"
        )

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._shutdown()

    def events(self) -> AsyncIterator[DriverEvent]:
        """The framework's events, for a driver built without a scheduler::

            async with Driver(None, info, master) as driver:
                async for event in driver.events():
                    match event:
                        case sdk.OffersEvent(offers=offers): ...
                        case sdk.UpdateEvent(status=status): ...

        One event at a time, in order; a status is acknowledged when the loop asks for the next
        event. The loop ends when the driver does (``stop()``, ``teardown()``), raising what
        ``wait()`` would raise."""
        channel = self.scheduler
        if not isinstance(channel, EventChannel):
            raise RuntimeError("events() needs a Driver built without a scheduler (None)")
        return channel.stream(self)

    async def wait(self) -> None:
        """Run until ``stop()``/``teardown()``; re-raise whatever else ended the driver."""
        await self._done.wait()
        if self._failure is not None:
            raise self._failure

    async def stop(self) -> None:
        """End the driver without ending the framework: the master keeps its tasks for
        ``failover_timeout`` seconds, so a new driver with the same id can take over.

        Called from a callback, the driver ends when that callback returns (the statuses
        handled so far are still acknowledged)."""
        self._finish(None)
        await self._shutdown()

    def _finish(self, failure: BaseException | None) -> None:
        if self._done.is_set():
            return
        self._failure = failure
        self._done.set()

    async def _shutdown(self) -> None:
        self._finish(None)
        current = asyncio.current_task()
        consumer, reader = self._consumer, self._reader
        if current is consumer:
            return  # the consumer ends after the callback in hand, and takes the reader along
        if consumer is not None and current is not reader and self._handling:
            # Let the event in hand finish, so its statuses are acknowledged.
            await asyncio.wait({consumer}, timeout=self._call_timeout)
        if current is not reader:
            await self._drain_acks()
        tasks = [t for t in (consumer, reader) if t is not None and t is not current]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if current is not reader:
            await self._close_channel()
            detector, self._detector = self._detector, None
            if detector is not None:
                await detector.close()

    async def _close_channel(self) -> None:
        calls, self._calls = self._calls, None
        if calls is not None:
            await calls.close()
        channel, self._channel = self._channel, None
        if channel is not None:
            await channel.close()

    async def _guard(self, body: Coroutine[Any, Any, None]) -> None:
        try:
            await body
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # a callback's bug, or a fatal refusal: end the driver
            self._finish(exc)
            self._cancel_others()

    def _cancel_others(self) -> None:
        current = asyncio.current_task()
        for t in (self._reader, self._consumer):
            if t is not None and t is not current:
                t.cancel()

    # -- the reader ---------------------------------------------------------------------------

    async def _read_forever(self) -> None:
        delays = self._backoff.delays(self._rng)
        while not self._done.is_set():
            was_subscribed, ended = await self._read_stream()
            if ended:
                return
            if was_subscribed:
                delays = self._backoff.delays(self._rng)  # a healthy connection resets backoff
            delay = next(delays)
            log.info(
                "reconnecting", master=self.master, delay=round(delay, 2), error=self._last_error
            )
            detector = self._detector
            if detector is None or not self.address:
                await asyncio.sleep(delay)
                continue
            # A new leader cuts the wait short: backing off from a dead one is no reason to be
            # late to its successor.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await detector.changed(self.address)

    async def _read_stream(self) -> tuple[bool, bool]:
        """One connection: subscribe and queue its events until it fails.

        Returns (got SUBSCRIBED, the framework ended and must not reconnect).
        """
        # The previous connection's channel stays open until now, so a call that was in flight
        # when its stream ended (a teardown, typically) gets its answer.
        await self._close_channel()
        if self._detector is None:
            self._detector = make_detector(self._spec)
        detector = self._detector
        address = self.address = await detector.leader()
        channel = aio_channel(address, self.tls, list(self._options.items()))
        self._channel = channel
        stub = SchedulerStub(channel)  # type: ignore[no-untyped-call]  # generated, unannotated
        info = FrameworkInfo()
        info.CopyFrom(self._info)
        info.id = self._framework_id
        call = stub.Subscribe(SubscribeRequest(framework_info=info))
        timeout: float | None = self._call_timeout  # until SUBSCRIBED arrives
        subscribed = False

        async def follow_leader() -> None:
            await detector.changed(address)
            call.cancel()

        follower = asyncio.create_task(follow_leader(), name="sdk-leader-follower")
        try:
            while True:
                try:
                    # asyncio.timeout, not wait_for: on 3.11 wait_for drops a cancellation that
                    # comes as the read completes, and a reader stopped that way went on to
                    # block on the full queue its cancelled consumer no longer empties, so
                    # stop() waited for it forever (seen once in CI's chaos tests).
                    async with asyncio.timeout(timeout):
                        event = await call.read()
                except TimeoutError:
                    self._last_error = (
                        f"no event from the master for {timeout:g} s"
                        if subscribed
                        else "the master did not answer the subscription"
                    )
                    return subscribed, False
                if event is grpc.aio.EOF:
                    self._last_error = "the master closed the event stream"
                    return subscribed, False
                if self._done.is_set():
                    return subscribed, True  # stopped: nobody consumes the queue any more
                assert isinstance(event, Event)
                kind = event.WhichOneof("event")
                if kind == "subscribed":
                    sub = event.subscribed
                    if sub.epoch < self._epoch:
                        self._last_error = (
                            f"refused the subscription of {address}: its epoch {sub.epoch} is "
                            f"below {self._epoch}, a deposed master's"
                        )
                        detector.failed(address)
                        return False, False
                    self._epoch = sub.epoch
                    self._framework_id = sub.framework_id
                    self._stream_id = sub.stream_id
                    self._master_id = sub.master_id
                    self._stub = stub
                    if self._calls is None and not self._unary_only:
                        self._calls = CallStream(stub)
                    interval = sub.heartbeat_interval_seconds
                    timeout = interval * self._missed_heartbeats if interval > 0 else None
                    subscribed = True
                    self._first_subscribed.set()
                    log.info("subscribed", master=address, framework_id=sub.framework_id)
                elif kind == "heartbeat":
                    continue
                await self._queue.put(event)
                if kind == "error":
                    return subscribed, True
        except grpc.aio.AioRpcError as err:
            code, details = err.code(), err.details() or ""
            self._last_error = f"{code.name}: {details}"
            if code in _FATAL_CODES:
                raise CallError("Subscribe", code, details) from None
            hint = leader_hint(err)
            if hint:
                detector.redirected(hint)
            elif not subscribed:
                detector.failed(address)
            return subscribed, False
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if not follower.done() or (task is not None and task.cancelling()):
                raise
            self._last_error = f"the leading master is no longer {address}"
            return subscribed, False
        finally:
            follower.cancel()
            self._stub = None
            call.cancel()
            if subscribed and not self._done.is_set():
                await self._queue.put(_Marker.DISCONNECTED)

    # -- the consumer -------------------------------------------------------------------------

    async def _consume(self) -> None:
        while not self._done.is_set():
            item = await self._queue.get()
            self._handling = True
            try:
                await self._dispatch(item)
            finally:
                self._handling = False
        await self._drain_acks()
        self._cancel_others()  # stopped from a callback: the reader is no longer needed

    async def _dispatch(self, item: _QueueItem) -> None:
        scheduler = self.scheduler
        if item is _Marker.DISCONNECTED:
            await scheduler.disconnected(self)
            return
        kind = item.WhichOneof("event")
        if kind == "subscribed":
            self._subscriptions += 1
            await scheduler.subscribed(self, item.subscribed.framework_id)
            await self._after_subscribing()
        elif kind == "offers":
            await scheduler.offers(self, list(item.offers.offers))
        elif kind == "rescind":
            await scheduler.rescinded(self, list(item.rescind.offer_ids))
        elif kind == "update":
            await self._dispatch_statuses(item)
        elif kind == "agents_lost":
            await scheduler.agents_lost(self, list(item.agents_lost.agents))
        elif kind == "executor_terminated":
            await scheduler.executor_terminated(self, item.executor_terminated)
        elif kind == "error":
            message = item.error.message
            await scheduler.error(self, message)
            self._finish(None if self._tearing_down else FrameworkError(message))

    async def _after_subscribing(self) -> None:
        """After a master restart or a lost connection: tell the demands and a suppression
        again (a restarted master keeps neither; a revive undoes one the master kept), and ask
        about every task launched and not known to have ended, since statuses may have been
        missed (the master's own, such as LOST, are not resent). A framework failing over into
        a new process (it knows no task) asks about all of its tasks instead. A new framework
        has nothing to say or ask, but a suppression asked before it first subscribed."""
        try:
            if self._demands is not None and self._subscriptions > 1:
                await self.set_demands(self._demands)
            if self._suppressed:
                await self.suppress()
            elif self._suppressed is False and self._subscriptions > 1:
                await self.revive()
            if not self._live and self._subscriptions == 1 and not self._info.id:
                return
            await self.reconcile(sorted(self._live.items()))
        except (CallError, NotSubscribedError) as err:
            # The connection went again: the next subscription does this again.
            log.info(
                "demands, suppression or reconciliation after subscribing not sent",
                error=str(err),
            )

    async def _dispatch_statuses(self, event: Event) -> None:
        acks: list[tuple[str, str, bytes]] = []
        live = self._live
        try:
            for status in event.update.statuses:
                # UNKNOWN: the master knows nothing of it; asking again would not change that.
                if status.state in TERMINAL_STATES or status.state == TaskState.TASK_STATE_UNKNOWN:
                    live.pop(status.task_id, None)
                else:
                    live[status.task_id] = status.agent_id
                await self.scheduler.status(self, status)
                if status.uuid:
                    acks.append((status.agent_id, status.task_id, status.uuid))
        finally:
            # Statuses handled before a failing callback are still acknowledged.
            if acks:
                for a in acks:
                    self._acks.setdefault((a[1], a[2]), a)
                if self._acker is None or self._acker.done():
                    self._acker = asyncio.create_task(self._ack_loop(), name="sdk-acker")

    # ------------------------------------------------------------------ calls
    # launch, decline, suppress, revive, set_demands, kill, reconcile, teardown: each builds
    # its request and sends it with the driver's one way of calling (the CALLS stream, or
    # unary RPCs on an older master).

    @staticmethod
    def _filters(refuse_seconds: float | None) -> Filters:
        return Filters() if refuse_seconds is None else Filters(refuse_seconds=refuse_seconds)

    async def launch(
        self,
        offers: Sequence[Offer | str],
        tasks: Sequence[TaskInfo],
        refuse_seconds: float | None = None,
        *,
        on_refused: Callable[[CallError], None] | None = None,
    ) -> None:
        """Accept ``offers`` (all of one agent, or all the offers of one gang) and launch
        ``tasks`` on their combined resources; what the tasks leave unused returns to the pool
        under the refuse filter.

        Tasks without an agent id get the offers' agent. A gang's offers may span agents: then
        every task names its agent (``sdk.place_gang`` does it), or this raises ``ValueError``
        before calling the master. The caller's messages are not modified. With no tasks this
        is a decline (of a whole gang, if the offers are one).

        With ``on_refused`` the accept is quiet, as Mesos' ACCEPT is (answered 202 whatever
        becomes of it): this returns once the call is on its way, the master answers it only
        if it refuses it, and that refusal (the tasks never ran: the offer was rescinded, an
        ACL, a deadline the master could not meet) is told to ``on_refused`` with the error
        this would have raised. The master then writes one message fewer per accept. The
        tasks count as live from the start, so if a broken connection hides what became of
        the accept they are reconciled after the next subscription, not forgotten.
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
        if on_refused is None:
            await self._unary("Accept", request)
            for c in launched:
                self._live.setdefault(c.task_id, c.agent_id)
            return
        live = self._live
        added = [c.task_id for c in launched if c.task_id not in live]
        for c in launched:
            live.setdefault(c.task_id, c.agent_id)

        def refused(err: CallError) -> None:
            for task_id in added:  # never launched; a status since would have said otherwise
                live.pop(task_id, None)
            try:
                on_refused(err)
            except Exception:  # the caller's bug must not break the calls stream it runs on
                log.exception("on_refused raised", method="Accept", error=str(err))

        try:
            await self._unary("Accept", request, on_refused=refused)
        except CallError as err:  # not sent (the stream broken), or refused as a unary call
            refused(err)

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

    async def _acknowledge(self, acks: list[tuple[str, str, bytes]]) -> None:
        try:
            request = AcknowledgeRequest(caller=self._caller("Acknowledge"))
            add = request.acknowledgements.add
            for agent_id, task_id, uuid in acks:
                add(agent_id=agent_id, task_id=task_id, uuid=uuid)
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
