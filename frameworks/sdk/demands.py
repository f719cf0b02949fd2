"""Demands: what a framework tells the master it still needs (docs/scheduling.md)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from corral.frameworks.sdk.placement import Constraint, Spread, Toleration
from corral.frameworks.sdk.tasks import _quantity
from corral.v1.common_pb2 import Demand as DemandPb
from corral.v1.common_pb2 import Resources


@dataclass(frozen=True, slots=True)
class Demand:
    """``count`` tasks of one shape (``mem`` and ``disk`` in MiB) in a priority class ("" : the
    cluster's default). Tasks launched with ``task(..., demand=name)`` count toward it while
    they live; once a framework has set demands it is offered resources only while one is
    unmet. ``min_member`` > 0 marks a gang of at least that many (offered as one bundle).

    ``constraints`` and ``tolerations`` are the placement rules of its tasks and ``spread``
    their topology spread (``sdk.Constraint``, ``sdk.Toleration``, ``sdk.Spread``): the
    framework places by them (``sdk.Placer``); the master uses them to explain why the demand
    is pending and, for gangs and preemption, where its tasks may go.

    Mistakes are caught here, at the line that made them (``ValueError``); the master checks
    again and refuses a bad list with INVALID_ARGUMENT naming the demand."""

    name: str
    count: int
    cpus: float
    mem: float
    disk: float = 0
    gpus: float = 0
    priority_class: str = ""
    min_member: int = 0
    constraints: Sequence[Constraint] = ()
    tolerations: Sequence[Toleration] = ()
    spread: Spread | None = None

    def __post_init__(self) -> None:
        # Tuples, so a Demand stays immutable and hashable whatever sequence it was given.
        object.__setattr__(self, "constraints", tuple(self.constraints))
        object.__setattr__(self, "tolerations", tuple(self.tolerations))
        for c in self.constraints:
            if not isinstance(c, Constraint):
                raise ValueError(f"demand {self.name!r}: constraints must be sdk.Constraint")
        for t in self.tolerations:
            if not isinstance(t, Toleration):
                raise ValueError(f"demand {self.name!r}: tolerations must be sdk.Toleration")
        if self.spread is not None and not isinstance(self.spread, Spread):
            raise ValueError(f"demand {self.name!r}: spread must be an sdk.Spread")
        if not self.name:
            raise ValueError("a demand needs a name")
        if isinstance(self.count, bool) or not isinstance(self.count, int) or self.count <= 0:
            raise ValueError(f"demand {self.name!r}: count must be an int > 0, got {self.count!r}")
        if not 0 <= self.min_member <= self.count:
            raise ValueError(
                f"demand {self.name!r}: min_member must be between 0 and count ({self.count}), "
                f"got {self.min_member!r}"
            )
        for field_name in ("cpus", "mem", "disk", "gpus"):
            _quantity(f"demand {self.name!r}: {field_name}", getattr(self, field_name))

    def to_pb(self) -> DemandPb:
        pb = DemandPb(
            name=self.name,
            count=self.count,
            resources=Resources(
                cpus=float(self.cpus),
                mem=float(self.mem),
                disk=float(self.disk),
                gpus=float(self.gpus),
            ),
            priority_class=self.priority_class,
            min_member=self.min_member,
            constraints=[c.to_pb() for c in self.constraints],
            tolerations=[t.to_pb() for t in self.tolerations],
        )
        if self.spread is not None:
            pb.spread.CopyFrom(self.spread.to_pb())
        return pb
