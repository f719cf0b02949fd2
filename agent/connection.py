"""The agent's one bidirectional stream to the master (AgentService.Connect), kept up forever.

The rules:
- On every new stream the owner is told ``on_open`` and answers with REGISTER (via ``send``):
  the master's contract is that REGISTER comes first.
- Outgoing messages wait in a small outbox that one writer drains. Status updates queued in the
  same loop iteration are merged into one STATUS_UPDATES message, and a queued heartbeat is
  replaced by a newer one, so the outbox stays as small as the core's pending statuses.
- A task's STARTING still waiting in that message gives its place to the task's next status: a
  simulated task, or a process forked before the writer woke, reports RUNNING alone. STARTING
  is optional on the wire, as in Mesos (the master's task states allow STAGING -> RUNNING), and
  the master's acknowledgement of the newer status settles it in the agent
  (status_updates.py). Each status left out is one less for the master to decode, forward and
  acknowledge, and for the framework to handle and acknowledge.
- When the stream breaks the outbox is dropped (the core resends after re-registration), the
  owner is told ``on_close``, and a new stream is tried after an exponential backoff with jitter
  (``initial`` doubling to ``maximum``), reset once the master answers.
- With several masters, a detector (``corral.detector``) says which to connect
  to: each stream goes to the leader it names, and is closed when it names another. A
  standby's refusal names the leader (tried next); a master that does not answer is skipped.
- Fencing: every message carries its master's leadership epoch. A message from a lower epoch
  than the highest seen is refused and the stream closed: a deposed master commands no agent.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import grpc
import grpc.aio

from corral.detector import MasterDetector, leader_hint
from corral.limits import MAX_MESSAGE_BYTES
from corral.logging import get_logger
from corral.supervise import spawn
from corral.tls import Credentials, aio_channel, resolve
from corral.v1 import agent_pb2, agent_pb2_grpc, common_pb2
from corral.wakeup import Wakeup

log = get_logger("corral.agent.connection")

# Keepalive pings find a master that vanished without closing the connection (a partition); a
# closed connection is noticed at once anyway. The master's server must allow pings this often
# (grpc.http2.min_recv_ping_interval_without_data_ms <= 60000), as it does for the SDK.
CHANNEL_OPTIONS: Sequence[tuple[str, int]] = (
    ("grpc.keepalive_time_ms", 60_000),
    ("grpc.keepalive_timeout_ms", 20_000),
    ("grpc.http2.max_pings_without_data", 0),
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    # The channel's own reconnection must not be slower than ours.
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 5_000),
)


# Seconds before an agent whose registration the master refused (PERMISSION_DENIED) tries again.
REFUSED_RETRY = 30.0


def open_channel(target: str, tls: Credentials | None = None) -> grpc.aio.Channel:
    """A channel to the master at ``target``: mutual TLS with the agent's credential (``tls``,
    else found as corral.tls says), plain text only when told ``INSECURE``."""
    return aio_channel(target, resolve(tls), CHANNEL_OPTIONS)


class ChannelPool:
    """Channels by master address and slot: the agents of one process share a few channels
    (HTTP/2 connections) to whichever master leads, all with one credential.

    With ``setting_up`` > 0, at most that many of its agents' streams are being set up at once
    (dialled, REGISTER sent, not yet answered); the others wait their turn, first come first
    served. Thousands of simulated agents of one process reconnecting at once (a failover: the
    detector names the new leader to all of them together) otherwise each took one step per
    turn of the process's event loop, every turn as long as all of them: the first REGISTER went
    out only after every agent had dialled, and at 12,500 agents a process the new leader waited
    seconds for its first agent (docs/performance.md, "Master failover at 50,000 agents").
    Bounded, the first agents register at once and the rest as the master answers."""

    def __init__(self, tls: Credentials | None = None, setting_up: int = 0) -> None:
        self._channels: dict[tuple[str, int], grpc.aio.Channel] = {}
        self.tls = resolve(tls)  # NoCredentials (a ValueError) here, not at the first connect
        self._setting_up = asyncio.Semaphore(setting_up) if setting_up > 0 else None

    async def begin_setup(self) -> None:
        """Wait for a turn to set a stream up (with no bound: at once)."""
        if self._setting_up is not None:
            await self._setting_up.acquire()

    def end_setup(self) -> None:
        """A stream set up (answered) or given up: the turn goes to the next agent."""
        if self._setting_up is not None:
            self._setting_up.release()

    def get(self, address: str, slot: int = 0) -> grpc.aio.Channel:
        channel = self._channels.get((address, slot))
        if channel is None:
            channel = self._channels[(address, slot)] = open_channel(address, self.tls)
        return channel

    async def close(self) -> None:
        channels, self._channels = list(self._channels.values()), {}
        for channel in channels:
            await channel.close()


@dataclass(frozen=True, slots=True)
class ReconnectBackoff:
    initial: float = 0.1
    maximum: float = 5.0

    def delay(self, attempt: int, rng: random.Random) -> float:
        """Equal jitter: half fixed, half random, so a fleet does not reconnect in lockstep."""
        cap = min(self.maximum, self.initial * (2 ** min(attempt, 30)))
        return float(cap / 2 + rng.uniform(0, cap / 2))


class StreamOwner(Protocol):
    def on_open(self) -> None: ...
    def on_message(self, message: agent_pb2.MasterMessage) -> None: ...
    def on_close(self, error: str) -> None: ...


class MasterConnection:
    """The stream to ``channel``'s master, or with ``detector`` and ``pool`` to the leader."""

    def __init__(
        self,
        channel: grpc.aio.Channel | None,
        owner: StreamOwner,
        backoff: ReconnectBackoff | None = None,
        rng: random.Random | None = None,
        name: str = "",
        *,
        detector: MasterDetector | None = None,
        pool: ChannelPool | None = None,
        slot: int = 0,
    ) -> None:
        if channel is None and (detector is None or pool is None):
            raise ValueError("a MasterConnection needs a channel, or a detector and a pool")
        self._channel = channel
        self._detector = detector
        self._pool = pool
        self._slot = slot
        self.address = ""  # the master of the current stream (with a detector)
        self.epoch = 0  # the highest leadership epoch seen (fencing)
        self._owner = owner
        self._backoff = backoff or ReconnectBackoff()
        self._rng = rng or random.Random()
        self._log = log.bind(agent=name)
        self._outbox: deque[agent_pb2.AgentMessage] = deque()
        # The STATUS_UPDATES message statuses are being added to, and its tasks whose last
        # status in it is a STARTING (which the task's next status replaces).
        self._open: agent_pb2.AgentMessage | None = None
        self._starting: dict[tuple[str, str], common_pb2.TaskStatus] = {}
        self._wakeup = Wakeup()  # the writer's; not asyncio.Event: no system call per wait
        self._idle = asyncio.Event()
        self._idle.set()
        self._ended = asyncio.Event()
        self._call: (
            grpc.aio.StreamStreamCall[agent_pb2.AgentMessage, agent_pb2.MasterMessage] | None
        ) = None
        self._closing = False
        self._away = 0.0  # set by drop(): seconds to stay away once the stream is cut
        self.connected = False
        self.attempts = 0
        self._setting_up = False  # holding one of the pool's set-up turns

    # --- sending (synchronous: callers run in the loop, the writer does the IO) ----------

    def send(self, message: agent_pb2.AgentMessage) -> None:
        if self._call is None:
            return  # no stream: the core resends what matters after re-registering
        self._outbox.append(message)
        self._kick()

    def status_slot(self, task: tuple[str, str], starting: bool) -> common_pb2.TaskStatus | None:
        """A status of ``task`` (framework id, task id; a STARTING if ``starting``) for the
        caller to fill in place,
        in the STATUS_UPDATES message still open at the end of the outbox (building each status
        apart and copying it in cost twice as much): the place of the task's STARTING if that is
        its last status there, else a new one. None while there is no stream. The writer is
        woken either way."""
        if self._call is None:
            return None
        last = self._outbox[-1] if self._outbox else None
        if last is None or last is not self._open:
            last = self._open = agent_pb2.AgentMessage(status_updates=agent_pb2.StatusUpdates())
            self._starting.clear()
            self._outbox.append(last)
        self._kick()
        slot = self._starting.pop(task, None)
        if slot is None:
            slot = last.status_updates.statuses.add()
        else:
            slot.Clear()
        if starting:
            self._starting[task] = slot
        return slot

    def send_heartbeat(self, timestamp: float) -> None:
        if self._call is None:
            return
        for msg in self._outbox:
            if msg.WhichOneof("message") == "heartbeat":
                msg.heartbeat.timestamp = timestamp
                return
        self._outbox.append(
            agent_pb2.AgentMessage(heartbeat=agent_pb2.AgentHeartbeat(timestamp=timestamp))
        )
        self._kick()

    def _kick(self) -> None:
        self._idle.clear()
        self._wakeup.set()

    # --- the stream loop ---------------------------------------------------------------

    async def run(self) -> None:
        attempt = 0
        while not self._closing:
            error = await self._one_stream()
            if self._closing:
                break
            if self.connected:
                attempt = 0
            self.connected = False
            delay = self._backoff.delay(attempt, self._rng)
            if error.startswith("PERMISSION_DENIED"):
                # Refused by the master's ACLs (docs/security.md): asking again at once would be
                # refused again, and each refusal is an audit event. An operator who changes
                # the ACL sees the agent within this long.
                delay = max(delay, REFUSED_RETRY)
            if self._away > 0:
                # An agent cut off for that long would have been retrying all along: its first
                # try after the partition heals falls anywhere in its longest backoff.
                delay = self._away + self._rng.uniform(0, self._backoff.maximum)
                self._away = 0.0
            attempt += 1
            self._log.info(
                "master stream closed, reconnecting", error=error, retry_in=round(delay, 3)
            )
            if self._detector is None or not self.address:
                await asyncio.sleep(delay)
                continue
            # A new leader cuts the wait short (the backoff was from the dead one).
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self._detector.changed(self.address)

    async def _stub(self) -> agent_pb2_grpc.AgentServiceStub:
        channel = self._channel
        if channel is None:
            assert self._detector is not None and self._pool is not None
            self.address = await self._detector.leader()
            channel = self._pool.get(self.address, self._slot)
        return agent_pb2_grpc.AgentServiceStub(channel)  # type: ignore[no-untyped-call]

    async def _one_stream(self) -> str:
        """One stream, set up in a turn of the pool's (``ChannelPool``'s ``setting_up``)."""
        pool = self._pool
        if pool is None or self._channel is not None:
            return await self._stream()
        await pool.begin_setup()
        self._setting_up = True
        try:
            return await self._stream()
        finally:
            self._set_up()

    def _set_up(self) -> None:
        """The stream is answered (or over): its set-up turn goes back to the pool."""
        if self._setting_up:
            self._setting_up = False
            assert self._pool is not None
            self._pool.end_setup()

    async def _stream(self) -> str:
        self.attempts += 1
        stub = await self._stub()
        call = stub.Connect()
        self._call = call
        self._ended.clear()
        self._outbox.clear()
        self._owner.on_open()
        # A writer that fails unexpectedly must not leave the stream up with nothing sent on it
        # (no heartbeats: the master would mark the agent unreachable): end it and reconnect.
        writer = spawn(
            self._write(call), "agent-writer", self._log, on_failure=lambda _t, _e: call.cancel()
        )
        follower = self._follow_leader(call) if self._detector is not None else None
        error = "stream ended by the master"
        try:
            while True:
                msg = await call.read()
                if msg is grpc.aio.EOF:
                    if follower is not None and follower.done():
                        error = "the leading master changed"
                    break
                assert isinstance(msg, agent_pb2.MasterMessage)
                if msg.epoch < self.epoch:
                    who = self.address or "the master"
                    error = (
                        f"refused a message of epoch {msg.epoch} from {who}: epoch "
                        f"{self.epoch} was seen, it is a deposed master"
                    )
                    self._log.warning("deposed master refused", error=error)
                    if self._detector is not None:
                        self._detector.failed(self.address)
                    break
                self.epoch = msg.epoch
                self.connected = True
                self._set_up()
                self._owner.on_message(msg)
        except grpc.aio.AioRpcError as exc:
            error = f"{exc.code().name}: {exc.details()}"
            if follower is not None and follower.done():
                error = "the leading master changed"
            elif self._detector is not None:
                hint = leader_hint(exc)
                if hint:
                    self._detector.redirected(hint)
                elif not self.connected:
                    self._detector.failed(self.address)
        except asyncio.CancelledError:
            error = "closed"
            task = asyncio.current_task()
            ours = task is not None and task.cancelling() > 0
            if self._away > 0 and not ours:
                error = "dropped"  # drop() cancelled the call
            elif follower is not None and follower.done() and not ours:
                error = "the leading master changed"  # the follower cancelled the call
            elif not self._closing:
                raise
        finally:
            self._call = None
            self._outbox.clear()
            self._idle.set()
            self._ended.set()
            writer.cancel()
            if follower is not None:
                follower.cancel()
            with contextlib.suppress(asyncio.CancelledError, grpc.aio.AioRpcError):
                await writer
            call.cancel()
        self._owner.on_close(error)
        return error

    def _follow_leader(
        self, call: grpc.aio.StreamStreamCall[agent_pb2.AgentMessage, agent_pb2.MasterMessage]
    ) -> asyncio.Task[None]:
        """A task that ends the stream when the detector names another leader."""
        detector, address = self._detector, self.address
        assert detector is not None

        async def follow() -> None:
            await detector.changed(address)
            self._log.info("leading master changed, reconnecting", old=address)
            call.cancel()

        return asyncio.get_running_loop().create_task(follow(), name="agent-leader-follower")

    async def _write(
        self, call: grpc.aio.StreamStreamCall[agent_pb2.AgentMessage, agent_pb2.MasterMessage]
    ) -> None:
        try:
            while True:
                await self._wakeup.wait()
                # One more loop turn before writing: what the same moment still has queued
                # joins this message. A simulated or already-forked task's RUNNING then leaves
                # with its STARTING, one message and one acknowledgement instead of two each.
                await asyncio.sleep(0)
                self._wakeup.clear()
                while self._outbox:
                    await call.write(self._outbox.popleft())
                self._idle.set()
        except (grpc.aio.AioRpcError, grpc.aio.UsageError, asyncio.InvalidStateError):
            call.cancel()  # the reader sees the failure and reconnects

    def drop(self, away: float) -> None:
        """Cut the stream as a network partition would, and reconnect ``away`` seconds later
        plus a random part of the longest backoff, as an agent retrying through the partition
        would (simulated agents: ``corral loadtest --loss-wave``). Nothing is flushed: what the
        outbox held is resent after re-registration, as after any lost stream."""
        call = self._call
        if call is None or self._closing:
            return
        self._away = max(away, 1e-3)
        call.cancel()

    async def close(self, flush_timeout: float = 0.0) -> None:
        """Stop reconnecting. With ``flush_timeout``, first hand the outbox to the master
        (statuses of tasks killed at shutdown): write it, half-close, and wait for the master to
        end the stream, so nothing written is lost to a cancel racing ahead of it."""
        self._closing = True
        call = self._call
        if call is not None and flush_timeout > 0:
            with contextlib.suppress(TimeoutError, grpc.aio.AioRpcError, grpc.aio.UsageError):
                async with asyncio.timeout(flush_timeout):
                    await self._idle.wait()
                    await call.done_writing()
                    await self._ended.wait()
        if call is not None:
            call.cancel()
