"""Corral's framework SDK: write a scheduler, hand it to a Driver, get offers, launch tasks.

Everything a framework needs is importable from here; the message types are the wire
contract's own (``corral.v1``), re-exported so a framework imports from one place.
"""

from corral.frameworks.sdk.backoff import Backoff
from corral.frameworks.sdk.demand_sync import DemandSync
from corral.frameworks.sdk.demands import Demand
from corral.frameworks.sdk.driver import DEFAULT_MASTER, Driver
from corral.frameworks.sdk.errors import (
    CallError,
    ConnectError,
    DriverError,
    FrameworkError,
    NotSubscribedError,
)
from corral.frameworks.sdk.events import (
    AgentsLostEvent,
    DisconnectedEvent,
    DriverEvent,
    ErrorEvent,
    ExecutorTerminatedEvent,
    OffersEvent,
    RescindEvent,
    SubscribedEvent,
    UpdateEvent,
)
from corral.frameworks.sdk.explain import PendingDemand, why_pending
from corral.frameworks.sdk.logs import configure_logging
from corral.frameworks.sdk.offers import OfferPacker, fits, how_many_fit, place_gang
from corral.frameworks.sdk.placement import (
    Constraint,
    Placer,
    Rule,
    Spread,
    Toleration,
    binpack_order,
    spread_candidates,
    spread_order,
    where,
)
from corral.frameworks.sdk.review import Reviewer, ReviewResult
from corral.frameworks.sdk.scheduler import Scheduler
from corral.frameworks.sdk.signals import StopSignals
from corral.frameworks.sdk.states import (
    DISRUPTIONS,
    TERMINAL_STATES,
    is_disruption,
    is_terminal,
    state_name,
)
from corral.frameworks.sdk.status import StatusPublisher
from corral.frameworks.sdk.tasks import docker, new_task_id, qos_class, task
from corral.frameworks.sdk.views import OfferView, ReasonName, StateName, StatusView, view
from corral.tls import INSECURE, TLS, Insecure, NoCredentials, TLSError
from corral.v1.common_pb2 import (
    ContainerInfo,
    ExecutorTerminated,
    FrameworkCapability,
    FrameworkInfo,
    Offer,
    Principal,
    Resources,
    TaskInfo,
    TaskReason,
    TaskState,
    TaskStatus,
)
from corral.v1.scheduler_pb2 import AgentLossReason, AgentLost

__all__ = [
    "DEFAULT_MASTER",
    "DISRUPTIONS",
    "INSECURE",
    "TERMINAL_STATES",
    "TLS",
    "AgentLossReason",
    "AgentLost",
    "AgentsLostEvent",
    "Backoff",
    "CallError",
    "ConnectError",
    "Constraint",
    "ContainerInfo",
    "Demand",
    "DemandSync",
    "DisconnectedEvent",
    "Driver",
    "DriverError",
    "DriverEvent",
    "ErrorEvent",
    "ExecutorTerminated",
    "ExecutorTerminatedEvent",
    "FrameworkCapability",
    "FrameworkError",
    "FrameworkInfo",
    "Insecure",
    "NoCredentials",
    "NotSubscribedError",
    "Offer",
    "OfferPacker",
    "OfferView",
    "OffersEvent",
    "PendingDemand",
    "Placer",
    "Principal",
    "ReasonName",
    "RescindEvent",
    "Resources",
    "ReviewResult",
    "Reviewer",
    "Rule",
    "Scheduler",
    "Spread",
    "StateName",
    "StatusPublisher",
    "StatusView",
    "StopSignals",
    "SubscribedEvent",
    "TLSError",
    "TaskInfo",
    "TaskReason",
    "TaskState",
    "TaskStatus",
    "Toleration",
    "UpdateEvent",
    "binpack_order",
    "configure_logging",
    "docker",
    "fits",
    "how_many_fit",
    "is_disruption",
    "is_terminal",
    "new_task_id",
    "place_gang",
    "qos_class",
    "spread_candidates",
    "spread_order",
    "state_name",
    "task",
    "view",
    "where",
    "why_pending",
]
