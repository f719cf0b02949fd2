"""Commands: what the core asks the shell to do. Each repeats its event's ``stimulus_id``.

The shell may coalesce commands to the same destination (all OFFERS for one framework in one
message, all acknowledgements for one agent in one message) before sending.

Commands are values: made once, never changed. They are plain slotted dataclasses, not frozen
ones (types.py, _HOT_PATH): a frozen dataclass sets each field through ``object.__setattr__``,
and a ``ClusterEvent`` is made for every task that ends (1.1 µs frozen, 0.5 µs plain).
"""

from __future__ import annotations

from dataclasses import dataclass

from corral.master.core.durable import Change
from corral.master.core.offer_columns import OfferColumns
from corral.master.core.records import OfferRecord
from corral.master.core.types import Status, TaskSpec


@dataclass(slots=True, kw_only=True)
class Command:
    stimulus_id: str


# --- to frameworks ------------------------------------------------------------------------


@dataclass(slots=True, kw_only=True)
class SendSubscribed(Command):
    connection: int
    framework_id: str
    stream_id: str


@dataclass(slots=True, kw_only=True)
class SendOffers(Command):
    framework_id: str
    batches: tuple[OfferColumns, ...]  # the book's columns, all entries as made

    @property
    def offers(self) -> tuple[OfferRecord, ...]:
        """The offers as records (tests, tools): the hot path reads ``batches``."""
        return tuple(r for b in self.batches for r in b.records())


@dataclass(slots=True, kw_only=True)
class SendRescind(Command):
    framework_id: str
    offer_ids: tuple[str, ...]


@dataclass(slots=True, kw_only=True)
class SendUpdates(Command):
    framework_id: str
    statuses: tuple[Status, ...]


@dataclass(slots=True, kw_only=True)
class SendAgentLost(Command):
    """An agent the framework had tasks on is gone (Mesos' FAILURE with an ``agent_id``):
    UNREACHABLE (``removed`` False) or deleted for good."""

    framework_id: str
    agent_id: str
    hostname: str
    removed: bool
    message: str


@dataclass(slots=True, kw_only=True)
class SendExecutorTerminated(Command):
    """One of the framework's custom executors ended (Mesos' FAILURE with an
    ``executor_id``)."""

    framework_id: str
    agent_id: str
    executor_id: str
    status: int  # the process' wait status, as Mesos reports it
    message: str


@dataclass(slots=True, kw_only=True)
class CloseFrameworkStream(Command):
    """Send ERROR with ``message`` on the stream, then end it."""

    framework_id: str
    stream_id: str
    message: str


# --- to agents ----------------------------------------------------------------------------


@dataclass(slots=True, kw_only=True)
class SendRegistered(Command):
    connection: int
    agent_id: str
    heartbeat_interval: float
    secret: str = ""
    epoch: int = 0  # the master's leadership epoch (the agent refuses a lower one)
    principal: str = ""  # whom the id is bound to: the agent keeps it with the id


@dataclass(slots=True, kw_only=True)
class SendHeartbeatInterval(Command):
    """Ask a registered agent to heartbeat at another interval (the cluster grew or shrank)."""

    agent_id: str
    heartbeat_interval: float


@dataclass(slots=True, kw_only=True)
class SendLaunch(Command):
    agent_id: str
    framework_id: str
    tasks: tuple[TaskSpec, ...]
    # The framework's owner, sent with each task (sealed by the shell: master/security/seals.py)
    # for the
    # agent to keep and report after a master restart.
    principal: str = ""
    role: str = "*"


@dataclass(slots=True, kw_only=True)
class SendKill(Command):
    agent_id: str
    framework_id: str
    task_id: str
    grace_seconds: float = 0.0


@dataclass(slots=True, kw_only=True)
class SendAgentAcks(Command):
    agent_id: str
    # (framework_id, task_id, uuid): an agent keys its tasks by framework and id, as Mesos'
    acknowledgements: tuple[tuple[str, str, bytes], ...]


@dataclass(slots=True, kw_only=True)
class CloseAgentStream(Command):
    """End a stale agent stream (its agent re-registered on another one)."""

    connection: int
    reason: str


# --- to operators -------------------------------------------------------------------------


@dataclass(slots=True, kw_only=True)
class ClusterEvent(Command):
    """One entry of the cluster events log. ``kind`` decides ``reason`` and ``object_kind``
    (corral/events.py's table); ``subject`` is the object's id."""

    kind: str
    subject: str
    message: str
    timestamp: float
    reason: str
    object_kind: str


@dataclass(slots=True, kw_only=True)
class Answer(Command):
    """What the call that caused the event is answered with (an operator's action), given to
    its caller once the event's changes are durable; at most one per event."""

    value: object


# --- to the registry ----------------------------------------------------------------------


@dataclass(slots=True, kw_only=True)
class Persist(Command):
    """Make these changes durable before anything else this event caused is visible
    (durable.py, rule 4). At most one per event, last in its commands."""

    changes: tuple[Change, ...]
