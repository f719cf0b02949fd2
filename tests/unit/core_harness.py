"""Drives a MasterCore with events and a manual clock; no network, no asyncio."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from corral.acl import ANONYMOUS, Acl, Principal
from corral.master.allocator import make_allocator
from corral.master.core import commands as cmd
from corral.master.core import events as ev
from corral.master.core.config import MasterConfig
from corral.master.core.master import MasterCore
from corral.master.core.types import (
    AgentSpec,
    Demand,
    FrameworkSpec,
    ReportedTask,
    Status,
    TaskSource,
    TaskSpec,
    TaskState,
)
from corral.placement import Taint
from corral.resources import Resources

C = TypeVar("C", bound=cmd.Command)


def of(kind: type[C], commands: Iterable[cmd.Command]) -> list[C]:
    return [c for c in commands if isinstance(c, kind)]


@dataclass
class Harness:
    config: MasterConfig = field(default_factory=MasterConfig)
    now: float = 1000.0
    allocator: str = "numpy"
    acl: Acl | None = None  # None: the core's default (no principals, nothing refused)
    core: MasterCore = field(init=False)
    _seq: Any = field(default_factory=lambda: itertools.count(1))
    streams: dict[str, str] = field(default_factory=dict)  # framework id -> stream id
    connections: dict[str, int] = field(default_factory=dict)  # agent id -> connection

    def __post_init__(self) -> None:
        self.core = MasterCore(self.config, make_allocator(self.allocator), "m1", self.acl)

    def sid(self) -> str:
        return f"s{next(self._seq)}"

    def handle(self, event: ev.Event) -> list[cmd.Command]:
        try:
            return self.core.handle(event)
        finally:
            # After every event, refused or not (a refusal must leave the state as it was).
            self.core.validate()

    def base(self) -> dict[str, Any]:
        return {"stimulus_id": self.sid(), "now": self.now}

    def call_base(self, fw: str) -> dict[str, Any]:
        return {**self.base(), "framework_id": fw, "stream_id": self.streams[fw]}

    # ---- agents
    def add_agent(
        self,
        agent_id: str = "",
        resources: str | Resources = "cpus:4;mem:4096;disk:1000",
        attributes: dict[str, str] | None = None,
        taints: tuple[Taint, ...] = (),
        tasks: tuple[ReportedTask, ...] = (),
        hostname: str = "",
        peer: Principal = ANONYMOUS,
        reservations: dict[str, Resources] | None = None,
        sealed: bool = False,
        claimed: str = "",
    ) -> tuple[str, list[cmd.Command]]:
        """Register an agent; ``sealed``: its secret is the shell's seal of its id and ``peer``
        (master/security/seals.py); ``claimed``: the principal its checkpoint says its id was issued
        to."""
        from corral.resources import parse_resources

        res = parse_resources(resources) if isinstance(resources, str) else resources
        conn = next(self._seq)
        new_id = f"A{conn}"
        spec = AgentSpec(
            agent_id=agent_id,
            hostname=hostname or f"host-{agent_id or new_id}",
            resources=res,
            attributes=attributes or {},
            taints=taints,
            reservations=reservations or {},
            principal=claimed,
        )
        out = self.handle(
            ev.AgentRegister(
                **self.base(),
                connection=conn,
                spec=spec,
                new_agent_id=new_id,
                tasks=tasks,
                principal=peer,
                secret_sealed=sealed,
            )
        )
        aid = of(cmd.SendRegistered, out)[0].agent_id
        self.connections[aid] = conn
        return aid, out

    def agent_updates(self, agent_id: str, *statuses: Status) -> list[cmd.Command]:
        return self.handle(
            ev.AgentStatusUpdates(
                **self.base(),
                agent_id=agent_id,
                connection=self.connections[agent_id],
                statuses=statuses,
            )
        )

    def close_agent(self, agent_id: str) -> list[cmd.Command]:
        return self.handle(
            ev.AgentStreamClosed(
                **self.base(), agent_id=agent_id, connection=self.connections[agent_id]
            )
        )

    # ---- frameworks
    def subscribe(
        self,
        name: str = "fw",
        framework_id: str = "",
        peer: Principal = ANONYMOUS,
        **spec: Any,
    ) -> tuple[str, list[cmd.Command]]:
        n = next(self._seq)
        stream = f"stream{n}"
        out = self.handle(
            ev.FrameworkSubscribe(
                **self.base(),
                connection=n,
                spec=FrameworkSpec(framework_id=framework_id, name=name, **spec),
                new_framework_id=f"F{n}",
                stream_id=stream,
                principal=peer,
            )
        )
        fid = of(cmd.SendSubscribed, out)[0].framework_id
        self.streams[fid] = stream
        return fid, out

    def allocate(self) -> list[cmd.SendOffers]:
        return of(cmd.SendOffers, self.handle(ev.AllocationTick(**self.base(), seed=7)))

    def offers_for(self, fid: str) -> list[Any]:
        return [o for batch in self.allocate() if batch.framework_id == fid for o in batch.offers]

    def accept(
        self, fid: str, offer_ids: Iterable[str], *tasks: TaskSpec, refuse: float | None = None
    ) -> list[cmd.Command]:
        return self.handle(
            ev.Accept(
                **self.call_base(fid),
                offer_ids=tuple(offer_ids),
                tasks=tasks,
                refuse_seconds=refuse,
            )
        )

    def set_demands(self, fid: str, *demands: Demand) -> list[cmd.Command]:
        return self.handle(ev.SetDemands(**self.call_base(fid), demands=demands))

    def tick(self, advance: float = 0.0) -> list[cmd.Command]:
        self.now += advance
        return self.handle(ev.Tick(**self.base()))


def task(
    task_id: str, resources: str = "cpus:1;mem:128", demand: str = "", priority_class: str = ""
) -> TaskSpec:
    from corral.resources import parse_resources

    return TaskSpec(
        task_id=task_id,
        name=task_id,
        resources=parse_resources(resources),
        demand=demand,
        priority_class=priority_class,
    )


def demand(name: str, resources: str = "cpus:1;mem:128", count: int = 1, **fields: Any) -> Demand:
    from corral.resources import parse_resources

    return Demand(name=name, resources=parse_resources(resources), count=count, **fields)


def status(
    task_id: str,
    fid: str,
    aid: str,
    state: TaskState,
    uuid: bytes = b"",
    exit_code: int | None = None,
) -> Status:
    return Status(
        task_id=task_id,
        framework_id=fid,
        agent_id=aid,
        state=state,
        source=TaskSource.EXECUTOR,
        uuid=uuid,
        exit_code=exit_code,
    )
