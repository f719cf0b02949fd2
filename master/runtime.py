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
from collections import Counter, deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

import numpy as np

from corral import acl as acls
from corral import events as cluster_events
from corral.acl import ANONYMOUS, Principal
from corral.logging import get_logger
from corral.master import audit
from corral.master import usage_metrics as usage
from corral.master.allocator.interface import Allocator
from corral.master.core import admission
from corral.master.core import commands as cmd
from corral.master.core import events as ev
from corral.master.core.config import MasterConfig
from corral.master.core.durable import Change
from corral.master.core.master import MasterCore
from corral.master.core.refusals import CallRejected, Denied, Overloaded, Refusal
from corral.master.core.states import AgentState, FrameworkState
from corral.master.core.types import TaskState
from corral.master.event_log import EventLog
from corral.master.metrics import MasterMetrics
from corral.master.offer_wire import OfferEncoder
from corral.master.outbox import MAX_BATCH, MAX_BATCH_BYTES, Outbox
from corral.master.registry import MemoryRegistry, Registry, RegistryError
from corral.master.requester import RequesterSource
from corral.master.sandbox_relay import SandboxRelay
from corral.supervise import spawn
from corral.v1 import scheduler_pb2

log = get_logger("corral.master")

T = TypeVar("T")

STREAM_QUEUE_LIMIT = 10_000
STREAM_QUEUE_BYTES = 64 * 1024 * 1024  # MasterConfig.stream_queue_bytes, --stream-queue-mib
BATCH_LIMIT = 1024  # events handled per flush


@dataclass(eq=False)  # kept in sets by identity (MasterRuntime.new_stream)
class OutStream:
    """A bounded queue of wire messages for one stream, until ``end()`` or a failure.

    Bounded twice: by messages (each a batch) and by their estimated bytes (the outbox's
    estimates; a message put with size 0 is small, and only the count bounds those). A peer
    that does not keep up fails the stream instead of growing the master: ``on_fail`` is told
    once, so the stream's handler can end the call even while it is stuck writing to a peer
    that stopped reading (then it never gets back to this queue to see ``failed``)."""

    limit: int = STREAM_QUEUE_LIMIT  # messages (each a batch) queued before the stream is cut
    max_bytes: int = STREAM_QUEUE_BYTES  # estimated bytes queued before the stream is cut
    failed: str = ""
    on_fail: Callable[[str], None] | None = None
    peak_bytes: int = 0  # the most bytes ever queued at once (a gauge: the bound holds)
    _bytes: int = 0
    _items: deque[Any] = field(default_factory=deque)
    _sizes: deque[int] = field(default_factory=deque)  # each item's estimated bytes, 0: small
    _ready: asyncio.Event = field(default_factory=asyncio.Event)
    _ended: bool = False

    @property
    def queued_bytes(self) -> int:
        return self._bytes

    def backlogged(self) -> bool:
        """Whether messages wait unsent: what was queued earlier has not all been written."""
        return bool(self._items)

    def put(self, msg: Any, size: int = 0) -> None:
        """Queue ``msg``; ``size`` is its estimated length in bytes (an UPDATE's, to merge)."""
        if msg is None:
            # Never a message: a None written to gRPC ends the stream with UNKNOWN.
            raise TypeError("OutStream.put(None): use end() to end the stream")
        if self.failed or self._ended:
            return
        if len(self._items) >= self.limit:
            # The peer does not keep up: end the stream rather than grow without bound.
            self._fail("the stream fell too far behind")
        elif self._bytes + size > self.max_bytes:
            self._fail(
                f"the stream fell too far behind: {self._bytes + size} bytes queued, "
                f"more than {self.max_bytes}"
            )
        else:
            self._items.append(msg)
            self._sizes.append(size)
            self._bytes += size
            if self._bytes > self.peak_bytes:
                self.peak_bytes = self._bytes
        self._ready.set()

    def _fail(self, reason: str) -> None:
        self.failed = reason
        self._items.clear()
        self._sizes.clear()
        self._bytes = 0
        if self.on_fail is not None:
            self.on_fail(reason)

    def drop(self) -> None:
        """End the stream now, unsent messages dropped (a master that stopped leading)."""
        self._items.clear()
        self._sizes.clear()
        self._bytes = 0
        self.end()

    def end(self) -> None:
        """Make ``messages()`` stop after what is queued."""
        self._ended = True
        self._ready.set()

    async def messages(self) -> AsyncIterator[Any]:
        """What to write to the peer, until ``end()`` or a failure (see ``failed``).

        UPDATE events queued back to back go out as one: a busy master queues an UPDATE per
        framework per flush, faster than one write per loop turn sends them, and a framework
        then heard of its tasks seconds late (5k agents, unpaced launch)."""
        items, sizes = self._items, self._sizes
        while not self.failed:
            if not items:
                if self._ended:
                    return
                self._ready.clear()
                await self._ready.wait()
                continue
            msg = items.popleft()
            nbytes = sizes.popleft()
            self._bytes -= nbytes
            if _is_update(msg):
                statuses = msg.update.statuses
                nbytes = nbytes or msg.ByteSize()
                while items and _is_update(items[0]) and len(statuses) < MAX_BATCH:
                    more = sizes[0] or items[0].ByteSize()
                    if nbytes + more > MAX_BATCH_BYTES:
                        break  # one message must stay under the peer's size limit
                    nbytes += more
                    self._bytes -= sizes.popleft()
                    statuses.extend(items.popleft().update.statuses)
            yield msg


def _is_update(msg: Any) -> bool:
    return isinstance(msg, scheduler_pb2.Event) and msg.WhichOneof("event") == "update"


@dataclass
class _Query:
    fn: Callable[[MasterCore], Any]


@dataclass(frozen=True, slots=True)
class _Deadlined:
    """A call its caller waits for only until ``deadline`` (the runtime's clock)."""

    event: ev.Event
    deadline: float


# Tasks an agent ended on its own (eviction, revocable reclaim, memory limit): counted by reason.
_KILLED_BY_AGENT = frozenset(
    {cluster_events.EVICTED, cluster_events.RECLAIMED, cluster_events.OOM_KILLED}
)


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
        self.token_key: bytes | None = None  # signs the web page's tokens (tokens.py); TLS only
        self.config = config
        self.core = MasterCore(config, allocator, self.master_id, self.acl)
        self.registry: Registry = registry if registry is not None else MemoryRegistry()
        # Calls handled in this loop turn, with what they are answered (an Answer command's
        # value, else None), once the turn's registry changes are durable.
        self._answers: list[tuple[asyncio.Future[Any], object]] = []
        self.clock = clock
        self.metrics = MasterMetrics()
        self._rng = random.Random(seed)
        self._inbox: asyncio.Queue[tuple[Any, asyncio.Future[Any] | None]] = asyncio.Queue()
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
        # Set when one of the runtime's loops ended: the master must stop (serve_forever).
        self.died = asyncio.Event()
        self.death = ""
        self._counts = {"events": 0, "accepts": 0, "declined": 0, "heartbeats": 0}
        self._ticks_failing = 0  # allocation ticks in a row that raised as a whole
        self._status_counters: dict[str, Any] = {}
        self._offer_encoder = OfferEncoder()  # caches each agent's encoded part across cycles
        # Streams' queues by kind, and the most bytes a queue of each kind ever held (gauges).
        self._open_streams: dict[str, set[OutStream]] = {}
        self._peak_bytes: dict[str, int] = {}
        # ACCEPT calls in the inbox, not yet handled (bounded: config.max_waiting_accepts).
        self.accepts_waiting = 0
        self.accepts_waiting_peak = 0
        self.sandbox = SandboxRelay(self)  # `corral logs`: reads through the agents' streams
        self.requesters = RequesterSource(self._http_principal)  # who asked for an action

    def _http_principal(self, request: Any) -> Principal:
        key = self.token_key
        if key is None:
            return ANONYMOUS  # plain text: no principals (--insecure)
        from corral.master.http_auth import principal_of_request  # aiohttp: the HTTP shell's

        return principal_of_request(request, key, self.clock())

    # -------------------------------------------------------------- plumbing

    def stimulus(self, kind: str) -> str:
        return f"{kind}-{next(self._seq)}"

    def new_id(self, kind: str) -> str:
        return f"{self.master_id}-{kind}{next(self._seq)}"

    def new_secret(self) -> str:
        """An unguessable token (stream ids, agent secrets): randomness stays in the shell."""
        return secrets.token_urlsafe(24)

    def new_connection(self) -> int:
        return next(self._seq)

    def submit(self, event: ev.Event) -> None:
        self._inbox.put_nowait((event, None))

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
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if isinstance(event, ev.Accept) and not self._admit_accept(future):
            return future
        item: Any = event if timeout is None else _Deadlined(event, self.clock() + timeout)
        self._inbox.put_nowait((item, future))
        return future

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
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._inbox.put_nowait((_Query(fn), future))
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

    def start(self, epoch: int = 0) -> None:
        """Start the loops; the core's first event is the registry's content (raises
        RegistryError if it cannot be read) and the leadership ``epoch`` it acts in."""
        state = self.registry.load()
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
        ZooKeeper, master/ha.py)."""
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

    def new_stream(self, kind: str) -> OutStream:
        """A stream's bounded queue; ``kind`` ("framework" or "agent") labels its metrics."""
        stream = OutStream(max_bytes=self.config.stream_queue_bytes)
        self._open_streams.setdefault(kind, set()).add(stream)
        return stream

    def stream_ended(self, kind: str, stream: OutStream) -> None:
        self._open_streams.get(kind, set()).discard(stream)
        self._peak_bytes[kind] = max(self._peak_bytes.get(kind, 0), stream.peak_bytes)

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
            for stream in self.framework_streams.values():
                stream.put(beat)

    async def _core_loop(self) -> None:
        while True:
            batch = [await self._inbox.get()]
            while len(batch) < BATCH_LIMIT and not self._inbox.empty():
                batch.append(self._inbox.get_nowait())
            self.metrics.inbox_depth.set(self._inbox.qsize())
            outbox = Outbox(self._offer_encoder)
            for item, future in batch:
                self._process(item, future, outbox)
                if isinstance(item, ev.AgentStatusUpdates):
                    self._forget_wire(item)
            if outbox.changes:
                await self._persist(outbox.changes)
            self._flush(outbox)
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
            await asyncio.to_thread(self.registry.apply, changes)
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
            self._observe_launches(item)  # before the core moves the tasks to RUNNING
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
            self._observe_statuses(item)
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

    # ------------------------------------------------------- latency measurement
    # Offer latency comes from the core (take_offer_waits: it sees resources come back as it
    # returns them). Launch latency is a read-only look at the core's state from its own task,
    # before it handles a status batch: "launched" is the accept time the core keeps per task.

    def _observe_launches(self, item: ev.AgentStatusUpdates) -> None:
        agent = self.core.agents.get(item.agent_id)
        if agent is None:
            return
        observe = self.metrics.launch_latency.observe
        for s in item.statuses:
            if s.state is TaskState.RUNNING:
                task = agent.tasks.get((s.framework_id, s.task_id))
                if task is not None and task.state is not TaskState.RUNNING:
                    observe(max(0.0, item.now - task.launched_at))

    def _observe_statuses(self, item: ev.AgentStatusUpdates) -> None:
        m = self.metrics
        now = item.now
        by_state: dict[str, int] = {}
        oldest = now
        for s in item.statuses:
            name = s.state.name
            by_state[name] = by_state.get(name, 0) + 1
            if 0 < s.timestamp < oldest:
                oldest = s.timestamp
        # One observation per batch (its oldest status): a histogram per status costs more
        # than handling the status.
        if item.statuses:
            m.status_update_lag.observe(now - oldest)
        for name, n in by_state.items():
            child = self._status_counters.get(name)
            if child is None:
                child = self._status_counters[name] = m.status_updates.labels(name)
            child.inc(n)

    def _flush(self, outbox: Outbox) -> None:
        for fw_id, stream_id in outbox.subscribed:
            stream = self.framework_streams.get(stream_id)
            if stream is None:
                continue
            self._stream_of_framework[fw_id] = stream_id
            self._framework_of_stream[stream_id] = fw_id
            stream.put(
                scheduler_pb2.Event(
                    subscribed=scheduler_pb2.Subscribed(
                        framework_id=fw_id,
                        stream_id=stream_id,
                        heartbeat_interval_seconds=self.config.framework_heartbeat_interval,
                        master_id=self.master_id,
                        epoch=self.core.epoch,
                    )
                )
            )
        for stream_id, msg in outbox.stream_msgs:
            stream = self.framework_streams.get(stream_id)
            if stream is None:
                continue
            if msg is None:
                stream.end()
            else:
                stream.put(msg)
        for fw_id, msgs in outbox.framework_msgs.items():
            stream = self.framework_streams.get(self._stream_of_framework.get(fw_id, ""))
            if stream is None:
                continue  # disconnected: pending statuses are resent on re-subscription
            for fmsg in msgs:
                for wire, size in outbox.wire(fmsg):
                    stream.put(wire, size)
        epoch = self.core.epoch
        for conn, amsg in outbox.conn_msgs:
            astream = self.agent_streams.get(conn)
            if astream is None:
                continue
            if amsg is not None and amsg.HasField("registered"):
                self._connection_of_agent[amsg.registered.agent_id] = conn
                self._agent_of_connection[conn] = amsg.registered.agent_id
                amsg.registered.master_id = self.master_id
            if amsg is None:
                astream.end()
            else:
                if epoch:
                    amsg.epoch = epoch
                astream.put(amsg)
        for agent_id, amsgs in outbox.agent_msgs.items():
            astream = self.agent_streams.get(self._connection_of_agent.get(agent_id, -1))
            if astream is None:
                continue
            for one, size in zip(amsgs, outbox.agent_sizes[agent_id], strict=True):
                if epoch:
                    one.epoch = epoch  # every command carries it: agents fence on it
                astream.put(one, size)
        self.publish(outbox.cluster_events)
        m = self.metrics
        counts = self._counts
        m.events_processed.inc(counts["events"])
        m.accepts.inc(counts["accepts"])
        m.offers_declined.inc(counts["declined"])
        m.agent_heartbeats.inc(counts["heartbeats"])
        counts["events"] = counts["accepts"] = counts["declined"] = counts["heartbeats"] = 0
        m.offers_sent.inc(outbox.offers_sent)
        m.offers_rescinded.inc(outbox.rescinded)
        m.tasks_launched.inc(outbox.launched)

    def publish(self, events: list[cmd.ClusterEvent]) -> None:
        """Cluster events into the bounded log, to the watchers, and (but the frequent ones)
        to the master's log."""
        for event in events:
            if self.recent_events.append(event):
                self.metrics.events_dropped.inc()
            for q in list(self._watchers):
                if q.full():
                    self._watchers.discard(q)  # a watcher that stopped reading loses its watch
                else:
                    q.put_nowait(event)
            if event.reason in _KILLED_BY_AGENT:
                self.metrics.tasks_killed_by_agent.labels(event.reason).inc()
            if event.reason not in cluster_events.QUIET:
                log.info(
                    event.kind,
                    reason=event.reason,
                    subject=event.subject,
                    detail=event.message,
                    stimulus_id=event.stimulus_id,
                )

    # Reverse maps keep these O(1): a scan of every agent per disconnect made a reconnect storm
    # of N agents cost N² on the core task.
    def forget_framework_stream(self, stream_id: str) -> None:
        self.framework_streams.pop(stream_id, None)
        fw_id = self._framework_of_stream.pop(stream_id, None)
        if fw_id is not None and self._stream_of_framework.get(fw_id) == stream_id:
            del self._stream_of_framework[fw_id]

    def connection_of(self, agent_id: str) -> int | None:
        """The connection of the agent's current stream, if it has one."""
        return self._connection_of_agent.get(agent_id)

    def forget_agent_connection(self, connection: int) -> None:
        self.agent_streams.pop(connection, None)
        agent_id = self._agent_of_connection.pop(connection, None)
        self.sandbox.connection_closed(connection, agent_id or "")
        if agent_id is not None and self._connection_of_agent.get(agent_id) == connection:
            del self._connection_of_agent[agent_id]

    def refresh_gauges(self) -> None:
        """Set the state gauges from the core (called by the core task, via query)."""
        core = self.core
        m = self.metrics
        # One pass each: a pass per state was 5 passes over 10k agents per scrape.
        agent_states = Counter(a.state for a in core.agents.values())
        for state in AgentState:
            m.agents.labels(state.value).set(agent_states[state])
        framework_states = Counter(f.state for f in core.frameworks.values())
        for fstate in FrameworkState:
            m.frameworks.labels(fstate.value).set(framework_states[fstate])
        m.tasks_active.set(sum(len(f.tasks) for f in core.frameworks.values()))
        m.offers_outstanding.set(len(core.offers))
        usage.refresh(m, core)
        per_agent = core.pacer.launching_per_agent()  # admission control (admission.py)
        m.launches_in_flight.set(sum(per_agent.values()))
        m.agent_launches_max.set(max(per_agent.values(), default=0))
        m.agents_held.set(len(core.holds.held))
        m.launch_window.set(core.pacer.window)
        m.pending_statuses_max.set(
            max((len(f.pending) for f in core.frameworks.values()), default=0)
        )
        m.accepts_waiting.set(self.accepts_waiting)
        m.accepts_waiting_peak.set(self.accepts_waiting_peak)
        for kind in ("framework", "agent"):
            streams = self._open_streams.get(kind, set())
            m.stream_queue_bytes.labels(kind).set(max((s.queued_bytes for s in streams), default=0))
            m.stream_queue_peak_bytes.labels(kind).set(
                max([self._peak_bytes.get(kind, 0), *(s.peak_bytes for s in streams)])
            )
