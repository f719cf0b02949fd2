"""Turns the core's commands into wire messages, coalescing per destination.

Order is kept per destination: a command of the same kind as the last message queued for that
destination is merged into it (offers, updates, launches, kills, acks); anything else starts a
new message. One flush therefore sends one OFFERS batch per framework per allocation cycle and
one UPDATE batch per framework per loop iteration, however many events produced them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from corral.limits import MAX_MESSAGE_BYTES
from corral.master.core import commands as cmd
from corral.master.core.durable import Change
from corral.master.core.offer_columns import OfferColumns
from corral.master.core.types import Status
from corral.master.security.seals import Seals
from corral.master.wire import convert
from corral.master.wire.offers import OfferEncoder
from corral.v1 import agent_pb2, common_pb2, scheduler_pb2

# A status batch larger than this is split so one message stays well under the size limit.
MAX_BATCH = 5000
# Every message the outbox merges stays under this many bytes, as estimated from above by
# ``*_bytes`` below, with room to spare under MAX_MESSAGE_BYTES: a framework or an agent
# refuses a larger message and loses its stream. The estimates cost a few len() calls per item;
# ByteSize() would cost as much as serializing the message a second time.
MAX_BATCH_BYTES = MAX_MESSAGE_BYTES // 2


# Offer ids are the master's own (its id, "-O", a counter): well under 64 bytes each.
MAX_RESCIND_IDS = MAX_BATCH_BYTES // 64


def text_bytes(text: str) -> int:
    """At least the UTF-8 length of ``text`` (exact for ASCII; isascii() is O(1))."""
    return len(text) if text.isascii() else 4 * len(text)


def status_bytes(s: Status) -> int:
    """At least a status's serialized length, with its key and length in a repeated field.
    (Statuses forwarded as received carry no unknown fields: rpc.py drops them.)"""
    return (
        64
        + text_bytes(s.task_id)
        + text_bytes(s.agent_id)
        + text_bytes(s.framework_id)
        + text_bytes(s.message)
        + len(s.uuid)
    )


@dataclass
class UpdateBatch:
    """An UPDATE event still open for more statuses, and its estimated size."""

    event: scheduler_pb2.Event
    nbytes: int = 0


@dataclass
class OfferBatch:
    """Offers for one framework, written to the wire when the outbox is flushed."""

    batches: list[OfferColumns]


@dataclass
class Outbox:
    # Offers are kept as OfferBatch and encoded by ``encoder`` (master/wire/offers.py) when
    # ``wire`` hands them to a stream; everything else is a protobuf message.
    encoder: OfferEncoder = field(default_factory=OfferEncoder)
    # Seals each launched task's framework owner (None: plain text, nothing sealed).
    seals: Seals | None = None
    framework_msgs: dict[str, list[scheduler_pb2.Event | OfferBatch | UpdateBatch]] = field(
        default_factory=dict
    )
    stream_msgs: list[tuple[str, scheduler_pb2.Event | None]] = field(default_factory=list)
    subscribed: list[tuple[str, str]] = field(default_factory=list)  # framework, stream
    agent_msgs: dict[str, list[agent_pb2.MasterMessage]] = field(default_factory=dict)
    # Each of agent_msgs' messages' estimated size, in the same order: the next command of the
    # same kind may be merged into the last one, and the agent's stream is bounded by them.
    agent_sizes: dict[str, list[int]] = field(default_factory=dict)
    conn_msgs: list[tuple[int, agent_pb2.MasterMessage | None]] = field(default_factory=list)
    cluster_events: list[cmd.ClusterEvent] = field(default_factory=list)
    # Registry changes: written (and durable) before anything else of the flush is sent.
    changes: list[Change] = field(default_factory=list)
    offers_sent: int = 0
    rescinded: int = 0
    launched: int = 0
    # The UPDATE message still open for more statuses, per framework (the last one queued).
    _open_update: dict[str, UpdateBatch] = field(default_factory=dict)

    def add(self, commands: Iterable[cmd.Command]) -> None:
        for c in commands:
            self._add(c)

    def wire(
        self, msg: scheduler_pb2.Event | OfferBatch | UpdateBatch
    ) -> list[tuple[scheduler_pb2.Event | bytes, int]]:
        """A framework message as it goes on the stream, with its estimated size (0: small):
        OFFERS as wire bytes (in as many events as keep each under MAX_BATCH_BYTES), the rest
        as is."""
        if isinstance(msg, OfferBatch):
            return [(b, len(b)) for b in self.encoder.events(msg.batches, MAX_BATCH_BYTES)]
        if isinstance(msg, UpdateBatch):
            return [(msg.event, msg.nbytes)]
        # RESCIND, ERROR: rarer than offers and updates, and a RESCIND may be large.
        return [(msg, msg.ByteSize())]

    def _fits(self, agent_id: str, size: int) -> bool:
        """Whether ``size`` more bytes fit the last message queued for the agent."""
        sizes = self.agent_sizes.get(agent_id)
        return (sizes[-1] if sizes else MAX_BATCH_BYTES) + size <= MAX_BATCH_BYTES

    def _add(self, c: cmd.Command) -> None:
        if isinstance(c, cmd.SendUpdates):
            batch = self._open_update.get(c.framework_id)
            statuses = batch.event.update.statuses if batch is not None else None
            for s in c.statuses:
                size = status_bytes(s)
                if (
                    batch is None
                    or statuses is None
                    or len(statuses) >= MAX_BATCH
                    or batch.nbytes + size > MAX_BATCH_BYTES
                ):
                    batch = UpdateBatch(scheduler_pb2.Event(update=scheduler_pb2.Update()))
                    self.framework_msgs.setdefault(c.framework_id, []).append(batch)
                    self._open_update[c.framework_id] = batch
                    statuses = batch.event.update.statuses
                batch.nbytes += size
                wire = s.wire  # the agent's message, while its event is being handled
                if wire is not None:
                    statuses.append(wire)  # type: ignore[arg-type]
                else:
                    convert.status_to_pb(s, statuses.add())
        elif isinstance(c, cmd.SendOffers):
            self.offers_sent += sum(map(len, c.batches))
            self._open_update.pop(c.framework_id, None)
            msgs = self.framework_msgs.setdefault(c.framework_id, [])
            prev = msgs[-1] if msgs else None
            if isinstance(prev, OfferBatch):
                prev.batches.extend(c.batches)
            else:
                msgs.append(OfferBatch(list(c.batches)))
        elif isinstance(c, cmd.SendRescind):
            self.rescinded += len(c.offer_ids)
            self._open_update.pop(c.framework_id, None)
            msgs = self.framework_msgs.setdefault(c.framework_id, [])
            prev = msgs[-1] if msgs else None
            if (
                isinstance(prev, scheduler_pb2.Event)
                and prev.HasField("rescind")
                and len(prev.rescind.offer_ids) + len(c.offer_ids) <= MAX_RESCIND_IDS
            ):
                prev.rescind.offer_ids.extend(c.offer_ids)
            else:
                msgs.append(
                    scheduler_pb2.Event(rescind=scheduler_pb2.Rescind(offer_ids=c.offer_ids))
                )
        elif isinstance(c, cmd.SendAgentLost):
            self._open_update.pop(c.framework_id, None)
            msgs = self.framework_msgs.setdefault(c.framework_id, [])
            prev = msgs[-1] if msgs else None
            if not (
                isinstance(prev, scheduler_pb2.Event)
                and prev.HasField("agents_lost")
                and len(prev.agents_lost.agents) < MAX_BATCH
            ):
                prev = scheduler_pb2.Event(agents_lost=scheduler_pb2.AgentsLost())
                msgs.append(prev)
            prev.agents_lost.agents.add(
                agent_id=c.agent_id,
                hostname=c.hostname,
                reason=(
                    scheduler_pb2.AGENT_LOSS_REASON_REMOVED
                    if c.removed
                    else scheduler_pb2.AGENT_LOSS_REASON_UNREACHABLE
                ),
                message=c.message,
            )
        elif isinstance(c, cmd.SendExecutorTerminated):
            self._open_update.pop(c.framework_id, None)
            self.framework_msgs.setdefault(c.framework_id, []).append(
                scheduler_pb2.Event(
                    executor_terminated=common_pb2.ExecutorTerminated(
                        framework_id=c.framework_id,
                        agent_id=c.agent_id,
                        executor_id=c.executor_id,
                        status=c.status,
                        message=c.message,
                    )
                )
            )
        elif isinstance(c, cmd.SendSubscribed):
            self.subscribed.append((c.framework_id, c.stream_id))
        elif isinstance(c, cmd.CloseFrameworkStream):
            self.stream_msgs.append(
                (c.stream_id, scheduler_pb2.Event(error=scheduler_pb2.Error(message=c.message)))
            )
            self.stream_msgs.append((c.stream_id, None))
        elif isinstance(c, cmd.SendRegistered):
            self.conn_msgs.append(
                (
                    c.connection,
                    agent_pb2.MasterMessage(
                        registered=agent_pb2.Registered(
                            agent_id=c.agent_id,
                            heartbeat_interval_seconds=c.heartbeat_interval,
                            secret=c.secret,
                            principal=c.principal,
                        ),
                        epoch=c.epoch,
                    ),
                )
            )
        elif isinstance(c, cmd.CloseAgentStream):
            self.conn_msgs.append((c.connection, None))
        elif isinstance(c, cmd.SendLaunch):
            self.launched += len(c.tasks)
            amsgs = self.agent_msgs.setdefault(c.agent_id, [])
            last = amsgs[-1] if amsgs else None
            ids = 16 + text_bytes(c.agent_id) + text_bytes(c.framework_id)
            launch = (
                last.launch_tasks
                if last is not None
                and last.HasField("launch_tasks")
                and last.launch_tasks.framework_id == c.framework_id
                else None
            )
            seal = (
                self.seals.framework(c.framework_id, c.principal, c.role)
                if self.seals is not None
                else b""
            )
            ids += 12 + text_bytes(c.principal) + text_bytes(c.role) + len(seal)
            for t in c.tasks:
                wire = t.wire
                if wire is None:
                    continue
                # Tasks come from frameworks, checked against MAX_TASK_BYTES by the core; the
                # launches of several accepts merged could still add up past the limit.
                size = wire.ByteSize() + ids  # type: ignore[attr-defined]
                if launch is None or self.agent_sizes[c.agent_id][-1] + size > MAX_BATCH_BYTES:
                    amsgs.append(
                        agent_pb2.MasterMessage(
                            launch_tasks=agent_pb2.LaunchTasks(framework_id=c.framework_id)
                        )
                    )
                    launch = amsgs[-1].launch_tasks
                    self.agent_sizes.setdefault(c.agent_id, []).append(ids)
                self.agent_sizes[c.agent_id][-1] += size
                task = launch.tasks.add()
                task.CopyFrom(wire)  # type: ignore[arg-type]
                task.agent_id = c.agent_id
                task.framework_id = c.framework_id
                # The master's, whatever the framework put there (master/security/seals.py).
                task.framework_principal = c.principal
                task.framework_role = c.role
                task.framework_seal = seal
                if t.priority:
                    task.priority = t.priority  # the agent evicts the lowest first
        elif isinstance(c, cmd.SendHeartbeatInterval):
            self.agent_msgs.setdefault(c.agent_id, []).append(
                agent_pb2.MasterMessage(
                    heartbeat_interval=agent_pb2.HeartbeatInterval(seconds=c.heartbeat_interval)
                )
            )
            self.agent_sizes.setdefault(c.agent_id, []).append(16)
        elif isinstance(c, cmd.SendKill):
            amsgs = self.agent_msgs.setdefault(c.agent_id, [])
            size = 24 + text_bytes(c.framework_id) + text_bytes(c.task_id)
            if amsgs and amsgs[-1].HasField("kill_tasks") and self._fits(c.agent_id, size):
                kills = amsgs[-1].kill_tasks
            else:
                amsgs.append(agent_pb2.MasterMessage(kill_tasks=agent_pb2.KillTasks()))
                kills = amsgs[-1].kill_tasks
                self.agent_sizes.setdefault(c.agent_id, []).append(0)
            self.agent_sizes[c.agent_id][-1] += size
            kills.kills.add(
                framework_id=c.framework_id,
                task_id=c.task_id,
                kill_grace_period_seconds=c.grace_seconds,
            )
        elif isinstance(c, cmd.SendAgentAcks):
            amsgs = self.agent_msgs.setdefault(c.agent_id, [])
            acks = (
                amsgs[-1].acknowledgements
                if amsgs and amsgs[-1].HasField("acknowledgements")
                else None
            )
            for framework_id, task_id, uuid in c.acknowledgements:
                size = 20 + text_bytes(task_id) + text_bytes(framework_id) + len(uuid)
                if acks is None or not self._fits(c.agent_id, size):
                    amsgs.append(
                        agent_pb2.MasterMessage(acknowledgements=agent_pb2.StatusAcknowledgements())
                    )
                    acks = amsgs[-1].acknowledgements
                    self.agent_sizes.setdefault(c.agent_id, []).append(0)
                self.agent_sizes[c.agent_id][-1] += size
                # add() then the fields: half the cost of add(**fields) in upb.
                ack = acks.acknowledgements.add()
                ack.task_id, ack.uuid, ack.framework_id = task_id, uuid, framework_id
        elif isinstance(c, cmd.Persist):
            self.changes.extend(c.changes)
        elif isinstance(c, cmd.ClusterEvent):
            self.cluster_events.append(c)
        elif isinstance(c, cmd.Answer):
            pass  # the runtime hands it to the call's caller (MasterRuntime._process_one)
        else:  # pragma: no cover - a new command kind without a wire form is a bug
            raise TypeError(f"no wire form for {type(c).__name__}")
