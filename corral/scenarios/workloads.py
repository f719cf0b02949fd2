"""The frameworks scenarios run, on the public SDK: small on purpose, each showing one way of
asking for resources (the shipped frameworks are under ``corral.frameworks``)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from corral.frameworks import sdk
from corral.frameworks.serving.app import AppSpec
from corral.frameworks.serving.instances import Counts
from corral.frameworks.serving.run import run_app

GPU = sdk.FrameworkCapability.FRAMEWORK_CAPABILITY_GPU_RESOURCES
LONG = 3600.0  # a simulated task that outlives any scenario


@dataclass
class Members:
    """Tasks of one framework by state, with when each started running."""

    started: dict[str, float] = field(default_factory=dict)  # task id -> monotonic time
    ended: set[str] = field(default_factory=set)
    preempted: int = 0

    def update(self, status: sdk.TaskStatus) -> None:
        if status.state == sdk.TaskState.TASK_STATE_RUNNING:
            self.started.setdefault(status.task_id, time.monotonic())
        elif sdk.is_terminal(status.state):
            self.ended.add(status.task_id)
            if status.reason == sdk.TaskReason.TASK_REASON_PREEMPTED:
                self.preempted += 1

    @property
    def running(self) -> int:
        return len(self.started.keys() - self.ended)


class Instances(sdk.Scheduler):
    """``count`` long tasks of one shape for demand ``name`` in ``priority_class``, as many
    per offer as fit; declines the rest for a second (it will want more when one ends)."""

    def __init__(
        self, name: str, count: int, cpus: float, mem: float, gpus: float = 0, *, cls: str = ""
    ) -> None:
        self.name, self.count, self.cls = name, count, cls
        self.cpus, self.mem, self.gpus = cpus, mem, gpus
        self.members = Members()
        self.launched: set[str] = set()

    def demand(self, min_member: int = 0) -> sdk.Demand:
        return sdk.Demand(
            self.name,
            self.count,
            cpus=self.cpus,
            mem=self.mem,
            gpus=self.gpus,
            priority_class=self.cls,
            min_member=min_member,
        )

    def _task(self) -> sdk.TaskInfo:
        return sdk.task(
            self.name,
            f"sleep {LONG:g}",
            cpus=self.cpus,
            mem=self.mem,
            gpus=self.gpus,
            priority_class=self.cls,
            demand=self.name,
            simulate_seconds=LONG,
        )

    @property
    def live(self) -> int:
        return len(self.launched - self.members.ended)

    async def offers(self, driver: sdk.Driver, offers: list[sdk.Offer]) -> None:
        for offer in offers:
            fit = sdk.how_many_fit(offer, self._task())
            tasks = [self._task() for _ in range(min(fit, self.count - self.live))]
            self.launched.update(t.task_id for t in tasks)
            await driver.launch([offer], tasks, refuse_seconds=1)

    async def status(self, driver: sdk.Driver, status: sdk.TaskStatus) -> None:
        self.members.update(status)


class Gang(Instances):
    """Its members only as one bundle: a gang demand (``min_member = count``), accepted whole
    with ``sdk.place_gang``; anything else it is offered is declined."""

    async def offers(self, driver: sdk.Driver, offers: list[sdk.Offer]) -> None:
        bundles: dict[str, list[sdk.Offer]] = {}
        loose: list[sdk.Offer] = []
        for offer in offers:
            (bundles.setdefault(offer.gang_id, []) if offer.gang_id else loose).append(offer)
        await driver.decline(loose, refuse_seconds=1)
        for bundle in bundles.values():
            tasks = [self._task() for _ in range(self.count - self.live)]
            try:
                placed = sdk.place_gang(bundle, tasks)
            except ValueError:  # the bundle changed under us: return it whole
                await driver.decline(bundle, refuse_seconds=0)
                continue
            self.launched.update(t.task_id for t in tasks)
            await driver.launch(bundle, placed)


class ServingRun:
    """The shipped serving framework (``corral run serving``) on an app, in this process, until
    ``close()``; ``counts`` is its latest status (wanted, running, healthy, pending, ...)."""

    def __init__(self, app: dict[str, object], master: str) -> None:
        self.spec = AppSpec.from_json(app)
        self.counts: Counts | None = None
        self._stop = asyncio.Event()
        self._task = asyncio.ensure_future(
            run_app(self.spec, master, stop=self._stop, on_status=self._status)
        )

    def _status(self, counts: Counts) -> None:
        self.counts = counts

    @property
    def running(self) -> int:
        """Its running instances; raises what ended the framework, if it ended."""
        if self._task.done():
            self._task.result()
            raise RuntimeError("the serving framework ended early")
        return 0 if self.counts is None else self.counts.running

    async def close(self) -> None:
        self._stop.set()
        await asyncio.wait_for(self._task, 60)
