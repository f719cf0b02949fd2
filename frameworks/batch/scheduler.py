"""The batch scheduler: runs a ``Job`` on the offers it gets, binpacked, at low priority.

- It tells the master what it needs as one demand for the current stage (``count`` = live
  tasks plus those waiting, within ``max_cpus``), so it is offered resources only while some
  are missing and auto-suppressed otherwise; at the end it withdraws the demand.
- Offers of one batch are filled fullest first (``job.binpack_order``), many tasks per offer;
  what it cannot use it declines with a long refuse filter. When it needs more after having
  declined (a retry, the next stage), it revives, which clears those filters.
- Its tasks are in the ``batch`` priority class (value -100, ``Never``): offered what serving
  leaves, preempted when serving needs the room. A task the cluster took away (preempted,
  evicted, drained, its revocable resources reclaimed: ``sdk.is_disruption``) is retried
  without spending one of its ``max_retries``: none of those is the task's fault.
- With ``JobSpec.revocable`` it also fills revocable offers (each accepted on its own, its
  tasks marked revocable), stages that need no disk and no gpus only.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from corral.frameworks import sdk
from corral.frameworks.batch.job import (
    Attempt,
    Job,
    JobSpec,
    Outcome,
    Room,
    binpack_order,
    fit_count,
)
from corral.frameworks.run_ids import new_run_id

LONG_REFUSE_SECONDS = 3600.0
_FINISHED = sdk.TaskState.TASK_STATE_FINISHED
# The master's answer to a reconciliation about a task it has no record of: the launch never
# reached it (the job service stopped between saving the attempt and launching it), or it lost
# the task with its agent. Either way not the task's failure: retried without spending a retry.
_NOT_KNOWN = frozenset({sdk.TaskState.TASK_STATE_LOST, sdk.TaskState.TASK_STATE_UNKNOWN})


@dataclass
class Event:
    """One thing worth telling the user (progress lines, the summary's numbers)."""

    kind: str  # "launched", "succeeded", "retry", "gave up", "stage"
    task_id: str = ""
    detail: str = ""


class Saver(Protocol):
    """Keeps tasks' records where a restarted job service finds them (``Job.saved``): called
    before a launch goes to the master (with the agent), and after each change."""

    def save(self, job: Job, tasks: list[tuple[int, int]], agent_id: str = "") -> None: ...


class BatchScheduler(sdk.Scheduler):
    def __init__(
        self,
        spec: JobSpec,
        on_event: Callable[[Event], None] = lambda e: None,
        clock: Callable[[], float] = time.monotonic,
        simulate: bool = True,
        run_id: str | None = None,
        job: Job | None = None,
        saver: Saver | None = None,
    ) -> None:
        self.job = job or Job(spec, run=new_run_id() if run_id is None else run_id)
        self.saver = saver
        self.on_event = on_event
        self.clock = clock
        self.simulate = simulate
        self.started_at = clock()
        self.first_launch_at: float | None = None
        self.finished_at: float | None = None
        self.finished = asyncio.Event()
        self.refused_launches = 0
        self.revocable_launches = 0
        # Set when the job service takes the job back (preempted, suspended): nothing more is
        # launched while its live tasks are killed and its framework torn down.
        self.closing = False
        # A refusal that will never change (an unknown or ungranted priority class): the job
        # cannot run.
        self.failure: sdk.CallError | None = None
        # The last time a task was launched or ended: how long the job has been stalled.
        self.last_progress = self.started_at
        self._declined_since_revive = False
        # One SetDemands in flight, the latest wins (500 tasks ending in a burst make a few
        # calls, not 500); refused for what it says (an unknown priority class, one the ACLs do
        # not grant), it never works, so the job ends with the master's reason rather than
        # wait forever.
        self._demands = sdk.DemandSync(self.demands, on_refused=self.fail)
        self._stage_seen = 0

    # -- demands ----------------------------------------------------------------------------

    def demands(self) -> list[sdk.Demand]:
        """What the job needs now, as the master counts it."""
        want = self.job.wanted
        if want <= 0:
            return []
        s = self.job.current
        return [
            sdk.Demand(
                s.name,
                want,
                cpus=s.cpus,
                mem=s.mem,
                disk=s.disk,
                gpus=s.gpus,
                priority_class=self.job.spec.priority_class,
                constraints=self.job.spec.constraints,
                tolerations=self.job.spec.tolerations,
            )
        ]

    async def sync_demands(self, driver: sdk.Driver) -> None:
        """Send the demand if it changed (sdk.DemandSync)."""
        self._demands.changed(driver)

    def fail(self, err: sdk.CallError) -> None:
        """End the run: ``run_job`` tears the framework down and raises ``err``."""
        if self.failure is None:
            self.failure = err
        self.finished.set()

    def stalled_for(self) -> float:
        """Seconds the job has had tasks it could launch now (within ``max_cpus``) and has
        launched or ended none; 0 when nothing waits on the master."""
        if self.job.done or self.job.room_for() == 0:
            return 0.0
        return self.clock() - self.last_progress

    async def settle(self) -> None:
        """Wait for a demand update in flight."""
        await self._demands.settle()

    # -- callbacks --------------------------------------------------------------------------

    async def subscribed(self, driver: sdk.Driver, framework_id: str) -> None:
        self._demands.resend(driver)  # a new master, perhaps: say it again

    async def offers(self, driver: sdk.Driver, offers: list[sdk.Offer]) -> None:
        revocable = [o for o in offers if o.revocable]
        if revocable:
            offers = [o for o in offers if not o.revocable]
            await self._revocable_offers(driver, revocable)
        unused: list[str] = []
        if self.job.done or self.closing:
            unused = [o.id for o in offers]
        else:
            stage = self.job.current
            rooms = [
                Room(o.resources.cpus, o.resources.mem, o.resources.disk, o.resources.gpus)
                for o in offers
            ]
            used: set[int] = set()
            for i in binpack_order(rooms, stage):
                attempts = self.job.take(fit_count(rooms[i], stage))
                if not attempts:
                    break  # nothing left to launch (or max_cpus reached): decline the rest
                used.add(i)
                await self._launch(driver, offers[i], attempts)
            unused = [o.id for i, o in enumerate(offers) if i not in used]
        if unused:
            try:
                await driver.decline(unused, refuse_seconds=LONG_REFUSE_SECONDS)
                self._declined_since_revive = True
            except sdk.DriverError:
                pass  # rescinded or disconnected: those offers are void anyway
        await self.sync_demands(driver)

    async def _revocable_offers(self, driver: sdk.Driver, offers: list[sdk.Offer]) -> None:
        """Each revocable offer filled on its own with marked tasks; the rest declined (a short
        filter: what is lendable changes with every usage report)."""
        unused: list[str] = []
        for offer in offers:
            stage = None if self.job.done or self.closing else self.job.current
            if stage is None or stage.disk > 0 or stage.gpus > 0:
                unused.append(offer.id)
                continue
            room = Room(offer.resources.cpus, offer.resources.mem)
            attempts = self.job.take(fit_count(room, stage))
            if not attempts:
                unused.append(offer.id)
                continue
            await self._launch(driver, offer, attempts, revocable=True)
        if unused:
            with contextlib.suppress(sdk.DriverError):
                await driver.decline(unused, refuse_seconds=5)

    def _task(self, a: Attempt, revocable: bool = False) -> sdk.TaskInfo:
        s = self.job.spec.stages[a.stage]
        return sdk.task(
            s.name,
            s.shell_command,
            cpus=s.cpus,
            mem=s.mem,
            disk=s.disk,
            gpus=s.gpus,
            task_id=a.task_id,
            env={
                "CORRAL_JOB": self.job.spec.name,
                "CORRAL_STAGE": s.name,
                "CORRAL_TASK_INDEX": str(a.index),
                "CORRAL_ATTEMPT": str(a.attempt),
            },
            priority_class=self.job.spec.priority_class,
            demand=s.name,
            simulate_seconds=s.duration if self.simulate else None,
            revocable=revocable,
            container=sdk.docker(self.job.spec.image) if self.job.spec.image else None,
        )

    async def _launch(
        self, driver: sdk.Driver, offer: sdk.Offer, attempts: list[Attempt], revocable: bool = False
    ) -> None:
        where = [(a.stage, a.index) for a in attempts]
        if self.saver is not None:
            self.saver.save(self.job, where, offer.agent_id)  # before the master hears of it
        try:
            await driver.launch([offer], [self._task(a, revocable) for a in attempts])
        except sdk.DriverError as err:
            # Rescinded meanwhile, or refused: nothing ran; they wait for the next offer.
            self.job.unlaunch(attempts)
            if self.saver is not None:
                self.saver.save(self.job, where)
            self.refused_launches += 1
            self.on_event(Event("refused", detail=str(err)))
            # A refusal for one of the master's bounds (RESOURCE_EXHAUSTED) leaves the offer
            # ours: give it back rather than hold it until it times out. (A rescinded one is
            # already gone; declining it is a no-op.)
            with contextlib.suppress(sdk.DriverError):
                await driver.decline([offer.id], refuse_seconds=0)
            return
        self.last_progress = self.clock()
        if self.first_launch_at is None:
            self.first_launch_at = self.last_progress
        if revocable:
            self.revocable_launches += len(attempts)
        for a in attempts:
            self.on_event(Event("launched", a.task_id, "revocable" if revocable else ""))

    async def status(self, driver: sdk.Driver, status: sdk.TaskStatus) -> None:
        if not sdk.is_terminal(status.state):
            return
        succeeded = status.state == _FINISHED
        disrupted = sdk.is_disruption(status) or (
            status.state in _NOT_KNOWN
            and status.reason == sdk.TaskReason.TASK_REASON_RECONCILIATION
        )
        before = self.job.pending
        attempt = self.job.live.get(status.task_id)
        outcome = self.job.ended(
            status.task_id,
            succeeded=succeeded,
            disrupted=disrupted,
            error=f"{sdk.state_name(status.state)} {status.message}".strip(),
        )
        if outcome is Outcome.IGNORED:
            return
        if self.saver is not None and attempt is not None:
            self.saver.save(self.job, [(attempt.stage, attempt.index)])
        self.last_progress = self.clock()
        detail = sdk.view(status).reason.lower() if disrupted else sdk.state_name(status.state)
        self.on_event(Event(outcome.value, status.task_id, detail))
        if self.job.stage != self._stage_seen and not self.job.done:
            self._stage_seen = self.job.stage
            self.on_event(Event("stage", detail=self.job.current.name))
        if self.job.done:
            self.finished_at = self.clock()
            self.finished.set()
            return
        if self.job.pending > before and self._declined_since_revive:
            # New work after declining with long filters: clear them, or agents we turned
            # down would stay hidden for an hour.
            self._declined_since_revive = False
            # (Reconnecting: a new subscription has no filters either.)
            with contextlib.suppress(sdk.DriverError):
                await driver.revive()
        await self.sync_demands(driver)

    # -- the summary ------------------------------------------------------------------------

    def summary(self) -> dict[str, object]:
        counts = self.job.counts()
        end = self.finished_at if self.finished_at is not None else self.clock()
        return {
            "job": self.job.spec.name,
            **counts,
            "refused_launches": self.refused_launches,
            "revocable_launches": self.revocable_launches,
            "makespan_seconds": round(end - self.started_at, 3),
        }
