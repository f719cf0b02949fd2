"""Typed, read-only views of the two messages every framework reads: task statuses and offers.

Callbacks still receive the wire messages (``TaskStatus``, ``Offer``), so existing frameworks
keep working and nothing is converted that a framework does not look at; ``sdk.view(msg)``
turns one into a view on demand. A view is a frozen snapshot: plain Python values (names
instead of enum numbers, ``None`` for an unset exit code, floats, port ranges, a dict of
attributes), with the message kept in ``raw`` for anything the view leaves out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal, get_args, overload

from corral.frameworks.sdk.states import TERMINAL_STATES, is_disruption
from corral.v1.common_pb2 import Offer, TaintEffect, TaskReason, TaskState, TaskStatus

# The wire enums without their prefixes. Literal types let a type checker catch a misspelt
# name (``view.state == "FINSHED"`` is an error under mypy --strict-equality); a test holds
# them equal to the proto's enums.
StateName = Literal[
    "UNSPECIFIED",
    "STAGING",
    "STARTING",
    "RUNNING",
    "KILLING",
    "FINISHED",
    "FAILED",
    "KILLED",
    "ERROR",
    "LOST",
    "DROPPED",
    "UNREACHABLE",
    "GONE",
    "UNKNOWN",
]
ReasonName = Literal[
    "UNSPECIFIED",
    "COMMAND_EXITED",
    "COMMAND_LAUNCH_FAILED",
    "KILLED_BY_FRAMEWORK",
    "AGENT_UNREACHABLE",
    "AGENT_REMOVED",
    "AGENT_RESTARTED",
    "AGENT_SHUTDOWN",
    "RECONCILIATION",
    "FRAMEWORK_REMOVED",
    "INVALID",
    "PREEMPTED",
    "EVICTED",
    "KILLED_DURING_LAUNCH",
    "KILLED_BY_OPERATOR",
    "AGENT_DRAINING",
    "MEMORY_LIMIT",
    "REVOCABLE_RESOURCES_RECLAIMED",
    "EXECUTOR_TERMINATED",
]
_STATES: frozenset[str] = frozenset(get_args(StateName))
_REASONS: frozenset[str] = frozenset(get_args(ReasonName))

# Taint effects as written on the command line (key=value:Effect), Kubernetes' spelling.
_EFFECTS = {
    TaintEffect.TAINT_EFFECT_UNSPECIFIED: "",
    TaintEffect.TAINT_EFFECT_NO_SCHEDULE: "NoSchedule",
    TaintEffect.TAINT_EFFECT_PREFER_NO_SCHEDULE: "PreferNoSchedule",
    TaintEffect.TAINT_EFFECT_NO_EXECUTE: "NoExecute",
}


def _enum_name(names: frozenset[str], full: str, prefix: str) -> str:
    name = full.removeprefix(prefix)
    if name not in names:  # a newer master's value: the proto grew, the Literal must too
        raise ValueError(f"unknown {prefix}* value {full!r}")
    return name


@dataclass(frozen=True, slots=True)
class StatusView:
    """One task status.

    ``state`` and ``reason`` are the enum names without prefix (``"FAILED"``, ``"PREEMPTED"``;
    ``"UNSPECIFIED"`` when unset); ``exit_code`` is None when the task did not exit (killed,
    lost, still running); ``needs_ack`` says the driver acknowledges it (it carried a uuid);
    ``disrupted`` that it ended for the cluster's reasons, not its own (``sdk.is_disruption``:
    preempted, evicted, drained, ...)."""

    task_id: str
    state: StateName
    reason: ReasonName
    message: str
    agent_id: str
    framework_id: str
    timestamp: float
    exit_code: int | None
    terminal: bool
    needs_ack: bool
    raw: TaskStatus
    disrupted: bool = False

    @classmethod
    def of(cls, status: TaskStatus) -> StatusView:
        state = status.state
        exit_code = status.exit_code if status.HasField("exit_code") else None
        return cls(
            task_id=status.task_id,
            state=_enum_name(_STATES, TaskState.Name(state), "TASK_STATE_"),  # type: ignore[arg-type]
            reason=_enum_name(_REASONS, TaskReason.Name(status.reason), "TASK_REASON_"),  # type: ignore[arg-type]
            message=status.message,
            agent_id=status.agent_id,
            framework_id=status.framework_id,
            timestamp=status.timestamp,
            exit_code=exit_code,
            terminal=state in TERMINAL_STATES,
            needs_ack=bool(status.uuid),
            raw=status,
            disrupted=is_disruption(status),
        )


@dataclass(frozen=True, slots=True)
class OfferView:
    """One offer: its resources as floats (``mem`` and ``disk`` in MiB), ``ports`` as inclusive
    ``(begin, end)`` ranges, ``attributes`` as a read-only dict, ``taints`` as
    ``key=value:Effect`` strings, ``gang_id`` non-empty for the offers of one gang bundle,
    ``revocable`` for revocable resources (tasks on it set ``sdk.task(..., revocable=True)``)."""

    id: str
    agent_id: str
    hostname: str
    cpus: float
    mem: float
    disk: float
    gpus: float
    ports: tuple[tuple[int, int], ...]
    attributes: Mapping[str, str]
    taints: tuple[str, ...]
    gang_id: str
    raw: Offer
    revocable: bool = False

    @property
    def port_count(self) -> int:
        return sum(end - begin + 1 for begin, end in self.ports)

    def port_list(self) -> list[int]:
        """Every port of the offer, lowest first (ranges can be large: prefer ``ports``)."""
        return [p for begin, end in self.ports for p in range(begin, end + 1)]

    @classmethod
    def of(cls, offer: Offer) -> OfferView:
        r = offer.resources
        return cls(
            id=offer.id,
            agent_id=offer.agent_id,
            hostname=offer.hostname,
            cpus=r.cpus,
            mem=r.mem,
            disk=r.disk,
            gpus=r.gpus,
            ports=tuple(sorted((p.begin, p.end) for p in r.ports)),
            attributes=MappingProxyType(dict(offer.attributes)),
            taints=tuple(
                f"{t.key}={t.value}:{_EFFECTS.get(t.effect, str(t.effect))}" for t in offer.taints
            ),
            gang_id=offer.gang_id,
            raw=offer,
            revocable=offer.revocable,
        )


@overload
def view(message: TaskStatus) -> StatusView: ...
@overload
def view(message: Offer) -> OfferView: ...
def view(message: TaskStatus | Offer) -> StatusView | OfferView:
    """The typed view of a status or an offer: ``sdk.view(status).exit_code``."""
    if isinstance(message, TaskStatus):
        return StatusView.of(message)
    if isinstance(message, Offer):
        return OfferView.of(message)
    raise TypeError(f"sdk.view takes a TaskStatus or an Offer, not {type(message).__name__}")
