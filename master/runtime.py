"""The master's IO shell around the core: one asyncio task owns the core, no locks.

Everything that touches the core goes through ``inbox``: RPC handlers submit events (and await a
future for calls that need an answer), timers submit ticks, HTTP handlers submit queries. The
core task takes what is queued, handles it event by event, and flushes the resulting commands as
coalesced wire messages into bounded per-stream queues that the stream handlers drain.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import random
import secrets
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import numpy as np

from corral import acl as acls
from corral.logging import get_logger
from corral.master import runtime_outputs
from corral.master.allocator.interface import Allocator
from corral.master.core import admission
from corral.master.core import commands as cmd
from corral.master.core import events as ev
from corral.master.core.config import MasterConfig, agent_ack_hold
from corral.master.core.durable import Change, RegistryState
from corral.master.core.master import MasterCore
from corral.master.core.refusals import CallRejected, Denied, Overloaded, Refusal
from corral.master.event_log import EventLog
from corral.master.inbox import Inbox
from corral.master.metrics import MasterMetrics
from corral.master.outbox import Outbox
from corral.master.registry import MemoryRegistry, Registry, RegistryError
from corral.master.rpc.out_stream import OutStream, StreamStats
from corral.master.sandbox_relay import SandboxRelay
from corral.master.security import audit
from corral.master.security.requester import RequesterSource
from corral.master.security.seals import Seals
from corral.master.service_status import StatusBoard
from corral.master.wire.offers import OfferEncoder
from corral.supervise import spawn
from corral.v1 import scheduler_pb2

log = get_logger("corral.master")

BATCH_LIMIT = 1024  # events handled per flush, agents' registrations aside (inbox.py)

T = TypeVar("T")


@dataclass
class _Query:
    fn: Callable[[MasterCore], Any]


@dataclass(frozen=True, slots=True)
class _Deadlined:
    """A call its caller waits for only until ``deadline`` (the runtime's clock)."""

    event: ev.Event
    deadline: float


class MasterRuntime:
    def __init__(
        self,
        config: MasterConfig,
        allocator: Allocator,
        *,
        master_id: str | None = None,
        clock: Callable[[], float] = time.time,
        seed: int | None = None,
        registry: Registry | None = None,
        acl: acls.Acl | None = None,
    ) -> None:
        self.master_id = master_id or uuid.uuid4().hex[:12]
        # What the shell authorizes with (operator endpoints) and the core too (SetAcls when it
        # changes): None is a plain-text master's, which has no principals to tell apart.
        self.acl = acl if acl is not None else acls.allow_all()
        self._token_key: bytes | None = None
        self.seals: Seals | None = None  # what agents report back, checked (seals.py); TLS only
        self.config = config
        self.core = MasterCore(config, allocator, self.master_id, self.acl)
        self.registry: Registry = registry if registry is not None else MemoryRegistry()
        # Calls handled in this loop turn, with what they are answered (an Answer command's
        # value, else None), once the turn's registry changes are durable.
        self._answers: list[tuple[asyncio.Future[Any], object]] = []
        self.clock = clock
        self.metrics = MasterMetrics()
        self._rng = random.Random(seed)
        self._inbox = Inbox()  # agents' registrations in a lane of their own (inbox.py)
        self._seq = itertools.count(1)
        self.framework_streams: dict[str, OutStream] = {}  # by stream id
        self._stream_of_framework: dict[str, str] = {}
        self._framework_of_stream: dict[str, str] = {}
        self.agent_streams: dict[int, OutStream] = {}  # by connection
        self._connection_of_agent: dict[str, int] = {}
        self._agent_of_connection: dict[int, str] = {}
        self.recent_events = EventLog()  # bounded: the oldest dropped, and counted
        self._watchers: set[asyncio.Queue[cmd.ClusterEvent]] = set()
        self._tasks: list[asyncio.Task[Any]] = []
        self._event_loop: asyncio.AbstractEventLoop | None = None  # the first call's (_new_future)
        # Set when one of the runtime's loops ended: the master must stop (serve_forever).
        self.died = asyncio.Event()
        self.death = ""
        self._counts = {"events": 0, "accepts": 0, "declined": 0, "heartbeats": 0}
        self._ticks_failing = 0  # allocation ticks in a row that raised as a whole
        self._status_counters: dict[str, Any] = {}
        self._offer_encoder = OfferEncoder()  # caches each agent's encoded part across cycles
        # Per stream kind ("framework", "agent"): what the queue gauges read (out_stream.py).
        self.stream_stats: dict[str, StreamStats] = {}
        # ACCEPT calls in the inbox, not yet handled (bounded: config.max_waiting_accepts).
        self.accepts_waiting = 0
        self.accepts_waiting_peak = 0
        self.sandbox = SandboxRelay(self)  # `corral logs`: reads through the agents' streams
        self.requesters = RequesterSource(self)  # who asked for an operator's action
        # What services publish for the UI (node groups, queues): not the core's state.
        self.service_status = StatusBoard()

    @property
    def token_key(self) -> bytes | None:
        """Signs the web page's tokens (tokens.py) and keys the seals (seals.py); TLS only."""
        return self._token_key

    @token_key.setter
    def token_key(self, key: bytes | None) -> None:
        self._token_key = key
        self.seals = Seals(key) if key is not None else None

    # -------------------------------------------------------------- plumbing

    def stimulus(self, kind: str) -> str:
        return f"{kind}-{next(self._seq)}"

    def new_id(self, kind: str) -> str:
        return f"{self.master_id}-{kind}{next(self._seq)}"

    def new_framework_id(self) -> str:
        """A framework id no one can guess (an id is asked for at SUBSCRIBE to fail over: the
        master's id, public at /health, and a counter would name every framework)."""
        return f"{self.master_id}-F{secrets.token_hex(12)}"

    def new_secret(self) -> str:
        """An unguessable token (stream ids, agent secrets): randomness stays in the shell."""
        return secrets.token_urlsafe(24)

    def new_connection(self) -> int:
        return next(self._seq)

    def submit(self, event: ev.Event) -> None:
        self._inbox.put((event, None))

    async def call(self, event: ev.Event, timeout: float | None = None) -> Any:
        """Submit an event and wait for the core's answer (an ``Answer`` command's value, or
        None); raises CallRejected."""
        return await self.submit_call(event, timeout)

    def submit_call(self, event: ev.Event, timeout: float | None = None) -> asyncio.Future[Any]:
        """Submit an event; the future is the core's answer (None, or CallRejected).

        With ``timeout`` (seconds the caller still waits), a call the core cannot reach in
        time is refused with DEADLINE_EXCEEDED instead of applied: an overloaded master would
        otherwise go on applying calls whose callers gave up on them (launches a framework
        believes failed), and fall further behind."""
        future: asyncio.Future[Any] = self._new_future()
        if isinstance(event, ev.Accept) and not self._admit_accept(future):
            return future
        item: Any = event if timeout is None else _Deadlined(event, self.clock() + timeout)
        self._inbox.put((item, future), registration=isinstance(event, ev.AgentRegister))
        return future

    def _new_future(self) -> asyncio.Future[Any]:
        # The loop is asked for once: on 3.11 each ask is a getpid system call (corral/wakeup.py).
        loop = self._event_loop
        if loop is None:
            loop = self._event_loop = asyncio.get_running_loop()
        return loop.create_future()

    def _admit_accept(self, future: asyncio.Future[Any]) -> bool:
        """Count an ACCEPT into the inbox, or refuse it at once when ``max_waiting_accepts``
        already wait: a caller is answered now rather than left waiting behind work the
        master cannot get through before its deadline."""
        refused = admission.waiting_accept(self.accepts_waiting, self.config.max_waiting_accepts)
        if refused is not None:
            self._reject(future, refused)
            return False
        self.accepts_waiting += 1
        if self.accepts_waiting > self.accepts_waiting_peak:
            self.accepts_waiting_peak = self.accepts_waiting
        return True

    async def query(self, fn: Callable[[MasterCore], T]) -> T:
        """Run ``fn`` on the core between two events and return its result."""
        future: asyncio.Future[T] = self._new_future()
        self._inbox.put((_Query(fn), future))
        return await future

    def set_acl(self, acl: acls.Acl) -> None:
        """Authorize with ``acl`` from now on: the shell at once, the core from its next event."""
        self.acl = acl
        self.submit(ev.SetAcls(stimulus_id=self.stimulus("acls"), now=self.clock(), acl=acl))

    def watch(self) -> asyncio.Queue[cmd.ClusterEvent]:
        q: asyncio.Queue[cmd.ClusterEvent] = asyncio.Queue(maxsize=10_000)
        self._watchers.add(q)
        return q

    def unwatch(self, q: asyncio.Queue[cmd.ClusterEvent]) -> None:
        self._watchers.discard(q)

    # ----------------------------------------------------------------- tasks

    async def read_registry(self) -> RegistryState:
        """The registry's content, read in a worker thread: a registry of 50,000 agents takes
        seconds to read, in which the event loop goes on answering (a standby's callers, the
        health check). Raises RegistryError."""
        started = time.perf_counter()
        state = await asyncio.to_thread(self.registry.load)
        self.metrics.registry_read.set(time.perf_counter() - started)
        return state

    def start(self, state: RegistryState, epoch: int = 0) -> None:
        """Start the loops; the core's first event is the registry's content ``state`` (from
        ``read_registry``) and the leadership ``epoch`` it acts in."""
        self.submit(
            ev.Recover(
                stimulus_id=self.stimulus("recover"), now=self.clock(), state=state, epoch=epoch
            )
        )
        self.set_acl(self.acl)
        loops = {
            "master-core": self._core_loop,
            "master-allocation": self._allocation_loop,
            "master-tick": self._tick_loop,
            "master-heartbeat": self._heartbeat_loop,
        }
        self._tasks = [
            spawn(loop(), name, log, forever=True, on_failure=self._loop_failed)
            for name, loop in loops.items()
        ]

    def task_failed(self, task: asyncio.Task[Any], exc: BaseException | None) -> None:
        """A task serving one stream failed (a bug; corral.supervise logged it): counted."""
        self.metrics.background_task_failures.labels(task.get_name()).inc()

    def _loop_failed(self, task: asyncio.Task[Any], exc: BaseException | None) -> None:
        """A loop of the runtime ended: a bug. The master stops rather than run half-dead (no
        timers, or no core), so whatever supervises the process restarts it."""
        name = task.get_name()
        self.metrics.background_task_failures.labels(name).inc()
        if not self.died.is_set():
            self.death = f"{name}: {exc!r}" if exc is not None else f"{name} returned"
            self.died.set()

    def halt(self) -> None:
        """Stop acting now, from the loop's own thread: no next loop turn, no offer, no
        registry write; every stream ends, what it had queued dropped (a leader that lost
        ZooKeeper, master/ha/candidate.py)."""
        for t in self._tasks:
            t.cancel()
        for stream in list(self.framework_streams.values()) + list(self.agent_streams.values()):
            stream.drop()

    async def stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for stream in list(self.framework_streams.values()) + list(self.agent_streams.values()):
            stream.end()

    async def _allocation_loop(self) -> None:
        # The next cycle is queued only after the previous one was handled, so cycles never
        # pile up in the inbox however long one takes. The wait is the whole interval after
        # each cycle, not counted from the last one's start: that was tried (issue #18, fourth
        # round) and cost ~13 % of the launch rate and a little decline rate at 0.05 s, for a
        # gain only where the cadence alone bounds the rate (decline at 0.1 s).
        while True:
            # Shorter while pacing holds offers back (MasterCore.cycle_interval).
            await asyncio.sleep(self.core.cycle_interval())
            await self._timer_call(
                ev.AllocationTick(
                    stimulus_id=self.stimulus("allocate"),
                    now=self.clock(),
                    seed=self._rng.getrandbits(32),
                )
            )

    async def _tick_loop(self) -> None:
        interval = min(0.5, self.config.agent_timeout / 4)
        while True:
            await asyncio.sleep(interval)
            await self._timer_call(
                ev.Tick(
                    stimulus_id=self.stimulus("tick"),
                    now=self.clock(),
                    backlogged=self.backlogged_frameworks(),
                )
            )

    def backlogged_frameworks(self) -> frozenset[str]:
        """Frameworks whose event streams still hold messages not yet written: the core
        resends none of their pending statuses until what it sent before has gone out (a
        framework that stopped reading otherwise had every pending status queued again each
        retry interval, and the master grew until its stream was cut)."""
        streams = self.framework_streams
        return frozenset(
            fw_id
            for fw_id, stream_id in self._stream_of_framework.items()
            if (stream := streams.get(stream_id)) is not None and stream.backlogged()
        )

    def new_stream(self, kind: str, status_retry: float = 0.0) -> OutStream:
        """A stream's bounded queue; ``kind`` ("framework" or "agent") labels its metrics. An
        agent's holds its acknowledgements for at most half its ``status_retry`` (its
        REGISTER's; 0: the default) and at most ``MasterConfig.agent_ack_hold``."""
        stats = self.stream_stats.setdefault(kind, StreamStats())
        hold = agent_ack_hold(self.config.agent_ack_hold, status_retry) if kind == "agent" else 0.0
        return OutStream(max_bytes=self.config.stream_queue_bytes, stats=stats, ack_hold=hold)

    def stream_ended(self, kind: str, stream: OutStream) -> None:
        stats = self.stream_stats.get(kind)
        if stats is not None:  # made by new_stream
            stats.holding.discard(stream)

    async def _timer_call(self, event: ev.Event) -> None:
        """A timer's event, handled before the timer goes on. A refusal (a failed handler:
        logged and counted by the core loop) must not end the timer, or every later tick is
        lost with it."""
        with contextlib.suppress(CallRejected):
            await self.call(event)

    async def _heartbeat_loop(self) -> None:
        beat = scheduler_pb2.Event(heartbeat=scheduler_pb2.Heartbeat())
        while True:
            await asyncio.sleep(self.config.framework_heartbeat_interval)
            for stream_id, stream in self.framework_streams.items():
                # A framework's first event is its SUBSCRIBED (as in Mesos): a stream whose
                # subscription the core has not answered yet gets no heartbeat ahead of it.
                if stream_id in self._framework_of_stream:
                    stream.put(beat)

    async def _core_loop(self) -> None:
        while True:
            batch = await self._inbox.take(BATCH_LIMIT)
            self.metrics.inbox_depth.set(self._inbox.qsize())
            outbox = Outbox(self._offer_encoder, self.seals)
            for item, future in batch:
                self._process(item, future, outbox)
                if isinstance(item, ev.AgentStatusUpdates):
                    self._forget_wire(item)
            if outbox.changes:
                await self._persist(outbox.changes)
            runtime_outputs.flush(self, outbox)
            answers, self._answers = self._answers, []
            for future, value in answers:
                if not future.done():
                    future.set_result(value)
            # A busy inbox never suspends ``get``: yield so stream writers get to run.
            await asyncio.sleep(0)

    async def _persist(self, changes: list[Change]) -> None:
        """Write the loop turn's registry changes before anything they cause is sent or
        answered (durable.py, rule 4). The registry failing is fatal: a master that cannot
        persist must not admit agents or frameworks it would forget; the calls waiting are
        refused and the loop ends (the master stops, and its supervisor restarts it)."""
        started = time.perf_counter()
        try:
            if self.registry.blocking:
                await asyncio.to_thread(self.registry.apply, changes)
            else:
                self.registry.apply(changes)
        except RegistryError as exc:
            log.error("registry_write_failed", registry=self.registry.describe(), error=str(exc))
            answers, self._answers = self._answers, []
            for future, _ in answers:
                self._reject(future, CallRejected(Refusal.UNAVAILABLE, f"registry: {exc}"))
            raise
        self.metrics.registry_writes.observe(time.perf_counter() - started)

    @staticmethod
    def _forget_wire(item: ev.AgentStatusUpdates) -> None:
        """Statuses from agents carry the wire message they came in (``Status.wire``) until
        their event has been handled, so the outbox forwards it instead of encoding the status
        again; then it is dropped, or every kept status would pin its whole batch."""
        for status in item.statuses:
            status.wire = None

    def _reject(self, future: asyncio.Future[Any] | None, exc: CallRejected) -> None:
        """A call refused, by the core or for its deadline: counted, and its caller told."""
        self.metrics.calls_rejected.labels(exc.code).inc()
        if isinstance(exc, Overloaded):
            self.metrics.accepts_refused.labels(exc.bound).inc()
        if future is not None and not future.done():
            future.set_exception(exc)

    def _process(self, item: Any, future: asyncio.Future[Any] | None, outbox: Outbox) -> None:
        if isinstance(item.event if isinstance(item, _Deadlined) else item, ev.Accept):
            self.accepts_waiting -= 1  # taken from the inbox (_admit_accept counted it in)
        try:
            self._process_one(item, future, outbox)
        except Exception as exc:
            self._event_failed(item, future, exc)

    def _event_failed(self, item: Any, future: asyncio.Future[Any] | None, exc: Exception) -> None:
        """Handling one event raised: a bug, in the core or the shell. Said loudly, counted,
        the event refused (its caller gets INTERNAL); the loop goes on with the next event, so
        one bad event costs one answer, not the master."""
        if isinstance(item, _Deadlined):
            item = item.event
        kind = type(item).__name__
        log.error(
            "core_failed",
            event_kind=kind,
            stimulus_id=getattr(item, "stimulus_id", ""),
            error=repr(exc),
            exc_info=exc,
        )
        self.metrics.event_failures.labels(kind).inc()
        if kind == "AllocationTick":
            # Outside any unit the core can quarantine (quarantine.py): said at each failure,
            # with the count in a row, so an operator sees a tick failing for good at once.
            self._ticks_failing += 1
            self.metrics.allocation_failing.set(self._ticks_failing)
        self._reject(future, CallRejected(Refusal.INTERNAL, f"internal error: {exc}"))

    def _process_one(self, item: Any, future: asyncio.Future[Any] | None, outbox: Outbox) -> None:
        if isinstance(item, _Query):
            try:
                result = item.fn(self.core)
            except Exception as exc:
                if future is not None and not future.done():
                    future.set_exception(exc)
                return
            if future is not None and not future.done():
                future.set_result(result)
            return
        if isinstance(item, _Deadlined):
            if self.clock() > item.deadline:
                self._reject(
                    future,
                    CallRejected(
                        Refusal.DEADLINE_EXCEEDED,
                        "the master could not get to the call before its deadline",
                    ),
                )
                return
            item = item.event
        counts = self._counts
        counts["events"] += 1
        if isinstance(item, ev.AllocationTick):
            item = self._held(item)
        if isinstance(item, ev.AgentStatusUpdates):
            runtime_outputs.observe_launches(
                self, item
            )  # before the core moves the tasks to RUNNING
        started = time.perf_counter()
        try:
            commands = self.core.handle(item)
        except CallRejected as exc:
            if isinstance(item, ev.OperatorAction):
                self.metrics.operator_actions.labels(type(item).__name__, exc.code).inc()
            if isinstance(exc, Denied):
                audit.deny(self, exc, item.stimulus_id)
            self._reject(future, exc)
            return
        if isinstance(item, ev.OperatorAction):
            self.metrics.operator_actions.labels(type(item).__name__, "OK").inc()
        if isinstance(item, ev.AllocationTick):
            self.metrics.allocation_cycle.observe(time.perf_counter() - started)
            for what, n in self.core.quarantine.take_failures().items():
                self.metrics.quarantined.labels(what).inc(n)
            if self._ticks_failing:
                log.info("allocation_tick_recovered", after_failures=self._ticks_failing)
                self._ticks_failing = 0
                self.metrics.allocation_failing.set(0)
            waits = self.core.take_offer_waits()
            if waits:
                self.metrics.offer_latency.observe_many(np.maximum(np.array(waits), 0.0))
        elif isinstance(item, ev.Tick):
            expired = self.core.take_offers_expired()
            if expired:
                self.metrics.offers_expired.inc(expired)
        elif isinstance(item, ev.Decline):
            counts["declined"] += len(item.offer_ids)
        elif isinstance(item, ev.Accept):
            counts["accepts"] += 1
        elif isinstance(item, ev.AgentHeartbeat):
            counts["heartbeats"] += 1
        elif isinstance(item, ev.AgentStatusUpdates):
            runtime_outputs.observe_statuses(self, item)
        outbox.add(commands)
        if future is not None:
            answer = next((c.value for c in commands if isinstance(c, cmd.Answer)), None)
            self._answers.append((future, answer))

    def _held(self, tick: ev.AllocationTick) -> ev.AllocationTick:
        """The cycle with ``hold`` set while half the waiting-accepts bound is reached: the
        accepts queued behind it are answered before more offers make more of them. Decided
        as the core reaches the tick, not when its timer queued it, so it counts the accepts
        still waiting then."""
        hold = admission.cycle_hold(self.accepts_waiting, self.config.max_waiting_accepts)
        if not hold:
            return tick
        self.metrics.cycles_held.inc()
        return replace(tick, hold=hold)

    def publish(self, events: list[cmd.ClusterEvent]) -> None:
        """Cluster events into the bounded log, to the watchers and the master's log."""
        runtime_outputs.publish(self, events)

    # Reverse maps keep these O(1): a scan of every agent per disconnect made a reconnect storm
    # of N agents cost N² on the core task.
    def forget_framework_stream(self, stream_id: str) -> None:
        self.framework_streams.pop(stream_id, None)
        fw_id = self._framework_of_stream.pop(stream_id, None)
        if fw_id is not None and self._stream_of_framework.get(fw_id) == stream_id:
            del self._stream_of_framework[fw_id]

    def framework_stream_closed(self, stream: OutStream, framework_id: str, stream_id: str) -> None:
        """A framework's stream ended (the gRPC Subscribe's or the Mesos API's SUBSCRIBE): it is
        forgotten here and the core told, which starts the framework's failover timeout."""
        self.stream_ended("framework", stream)
        self.forget_framework_stream(stream_id)
        self.submit(
            ev.FrameworkStreamClosed(
                stimulus_id=self.stimulus("disconnect"),
                now=self.clock(),
                framework_id=framework_id,
                stream_id=stream_id,
            )
        )

    def connection_of(self, agent_id: str) -> int | None:
        """The connection of the agent's current stream, if it has one."""
        return self._connection_of_agent.get(agent_id)

    def forget_agent_connection(self, connection: int) -> None:
        self.agent_streams.pop(connection, None)
        agent_id = self._agent_of_connection.pop(connection, None)
        self.sandbox.connection_closed(connection, agent_id or "")
        if agent_id is not None and self._connection_of_agent.get(agent_id) == connection:
            del self._connection_of_agent[agent_id]

    def agent_stream_closed(self, stream: OutStream, agent_id: str, connection: int) -> None:
        """An agent's stream ended: it is forgotten here and the core told, which detaches the
        agent until it registers again (as ``framework_stream_closed`` does for a framework)."""
        self.stream_ended("agent", stream)
        self.forget_agent_connection(connection)
        self.submit(
            ev.AgentStreamClosed(
                stimulus_id=self.stimulus("agent-closed"),
                now=self.clock(),
                agent_id=agent_id,
                connection=connection,
            )
        )

    def agents_connected(self) -> int:
        """Agents with a registered stream (the corral_agents_connected gauge)."""
        return len(self._connection_of_agent)

    def refresh_gauges(self) -> None:
        """Set the state gauges from the core (called by the core task, via query)."""
        runtime_outputs.refresh_gauges(self)
