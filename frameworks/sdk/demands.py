"""Demands: what a framework tells the master it still needs (docs/scheduling.md)."""

from __future__ import annotations

from dataclasses import dataclass

from corral.frameworks.sdk.tasks import _quantity
from corral.v1.common_pb2 import Demand as DemandPb
from corral.v1.common_pb2 import Resources


@dataclass(frozen=True, slots=True)
class Demand:
    """``count`` tasks of one shape (``mem`` and ``disk`` in MiB) in a priority class ("" : the
    cluster's default). Tasks launched with ``task(..., demand=name)`` count toward it while
    they live; once a framework has set demands it is offered resources only while one is
    unmet. ``min_member`` > 0 marks a gang of at least that many (stored by the master now;
    gang offers are a later step).

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

    def __post_init__(self) -> None:
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
        return DemandPb(
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
        )
