"""The gang scheduler: runs ``plan.Run`` on the offers and statuses the driver delivers.

- It asks for each attempt as one gang demand (``min_member`` = workers), so the master offers
  the whole gang as one bundle or nothing (docs/scheduling.md, "Gang offers"); it accepts a
  bundle whole, in one launch, and declines anything else without a refuse filter (a filter
  would hide those agents from the next bundle).
- When a member fails it first withdraws the demand (no bundle is cut for the missing member
  while the survivors are still alive), kills the survivors, and once every member has ended
  sets the next attempt's demand: the relaunched gang resumes from the last checkpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from corral.frameworks import sdk
from corral.frameworks.gang import plan
from corral.frameworks.gang.spec import TrainSpec
from corral.frameworks.run_ids import new_run_id

_FINISHED = sdk.TaskState.TASK_STATE_FINISHED
KILL_GRACE_SECONDS = 2.0


@dataclass
class Event:
    """One thing worth telling the user."""

    # "placed", "failed", "restart", "succeeded", "gave up", "refused", "waiting", "stopping"
    kind: str
    detail: str = ""


class Saver(Protocol):
    """Keeps the run where a restarted job service finds it (``plan.Run.saved``): before a
    gang's launch goes to the master, and after each change."""

    def save(self, saved: dict[str, Any]) -> None: ...


class GangScheduler(sdk.Scheduler):
    def __init__(
        self,
        spec: TrainSpec,
        on_event: Callable[[Event], None] = lambda e: None,
        clock: Callable[[], float] = time.monotonic,
        run_id: str | None = None,
        run: plan.Run | None = None,
        saver: Saver | None = None,
    ) -> None:
        self.spec = spec
        self.run_id = new_run_id() if run_id is None else run_id  # ends its task ids
        self.run = run or plan.Run(spec.workers, spec.max_restarts)
        self.saver = saver
        self.on_event = on_event
        self.clock = clock
        self.started_at = clock()
        self.finished_at: float | None = None
        self.finished = asyncio.Event()
        self.bundles: list[list[str]] = []  # per accepted bundle, the agents of its offers
        self.refused_launches = 0
        self._last_refusal = ""
        # Set when the job service takes the job back (preempted, suspended): no gang is
        # launched while its live tasks are killed and its framework torn down.
        self.closing = False
        # A refusal that will never change (an unknown or ungranted priority class): the run
        # cannot go on.
        self.failure: sdk.CallError | None = None
        self.waiting_since = self.started_at  # when the current attempt started waiting

    # -- demands ----------------------------------------------------------------------------

    def demands(self) -> list[sdk.Demand]:
        """A demand while waiting for a gang or running one; none while stopping or done."""
        if self.run.phase in (plan.Phase.WAITING, plan.Phase.RUNNING):
            return [plan.demand(self.spec, self.run.attempt)]
        return []

    async def sync_demands(self, driver: sdk.Driver) -> None:
        try:
            await driver.set_demands(self.demands())
        except sdk.CallError as err:
            if err.permanent:
                # E.g. an unknown priority class, or one the ACLs do not grant: it never works,
                # so end with the master's reason (``run_training`` tears down, then raises).
                self.fail(err)
            # Disconnected: the driver resubscribes and ``subscribed`` sends them again.

    def fail(self, err: sdk.CallError) -> None:
        if self.failure is None:
            self.failure = err
        self.finished.set()

    def stalled_for(self) -> float:
        """Seconds the current attempt's gang has waited to be placed; 0 unless waiting."""
        if self.run.phase is not plan.Phase.WAITING:
            return 0.0
        return self.clock() - self.waiting_since

    # -- callbacks --------------------------------------------------------------------------

    async def subscribed(self, driver: sdk.Driver, framework_id: str) -> None:
        await self.sync_demands(driver)

    async def offers(self, driver: sdk.Driver, offers: list[sdk.Offer]) -> None:
        unused: list[sdk.Offer] = []
        bundles: dict[str, list[sdk.Offer]] = {}
        for o in offers:
            if o.gang_id:
                bundles.setdefault(o.gang_id, []).append(o)
            else:
                unused.append(o)  # the trainer needs nothing but whole gangs
        for bundle in bundles.values():
            waiting = self.run.phase is plan.Phase.WAITING and not self.closing
            if waiting and await self._launch(driver, bundle):
                continue
            unused += bundle
        if unused:
            with contextlib.suppress(sdk.DriverError):  # rescinded or disconnected: void
                await driver.decline(unused, refuse_seconds=0)

    async def _launch(self, driver: sdk.Driver, bundle: list[sdk.Offer]) -> bool:
        try:
            tasks = plan.members(self.spec, bundle, self.run.attempt, self.run_id)
        except ValueError as err:
            self.refused_launches += 1
            if str(err) != self._last_refusal:  # the same bundle comes back every cycle
                self._last_refusal = str(err)
                self.on_event(Event("refused", str(err)))
            return False
        placed = {t.task_id: t.agent_id for t in tasks}
        if self.saver is not None:
            self.saver.save(self.run.saved(launching=placed))  # before the master hears of it
        try:
            await driver.launch(bundle, tasks)
        except sdk.DriverError as err:
            # Rescinded meanwhile (an agent left, the demand changed): the next bundle will do.
            self.refused_launches += 1
            self.on_event(Event("refused", str(err)))
            if self.saver is not None:
                self.saver.save(self.run.saved())
            return False  # declined: void already, or returned whole to be cut again
        self.run.launched(placed)
        agents = sorted({o.agent_id for o in bundle})
        self.bundles.append(agents)
        self.on_event(
            Event(
                "placed",
                f"attempt {self.run.attempt}: {len(tasks)} workers on {len(agents)} agent(s) "
                f"as gang {bundle[0].gang_id}",
            )
        )
        return True

    async def status(self, driver: sdk.Driver, status: sdk.TaskStatus) -> None:
        if not sdk.is_terminal(status.state):
            return
        state = sdk.state_name(status.state)
        why = f"{state} {status.message}".strip()
        was_running = self.run.phase is plan.Phase.RUNNING
        disrupted = sdk.is_disruption(status)
        member = status.task_id in self.run.live
        action = self.run.ended(status.task_id, status.state == _FINISHED, why, disrupted)
        if member and self.saver is not None:
            self.saver.save(self.run.saved())
        if action is plan.Action.NOTHING:
            return
        if was_running and status.state != _FINISHED:
            self.on_event(Event("failed", f"{status.task_id}: {why}; stopping the gang"))
        if action is plan.Action.KILL_SURVIVORS:
            await self.sync_demands(driver)  # withdrawn first: no bundle for the missing one
            for task_id, agent_id in list(self.run.live.items()):
                with contextlib.suppress(sdk.DriverError):  # it may have ended already
                    await driver.kill(task_id, agent_id, grace=KILL_GRACE_SECONDS)
            return
        if action is plan.Action.RELAUNCH:
            self.waiting_since = self.clock()
            if self.run.disrupted_last:  # the cluster's doing (sdk.is_disruption)
                spent = "relaunch (the cluster ended the attempt: no restart spent)"
            else:
                spent = f"restart {self.run.restarts} of at most {self.spec.max_restarts}"
            self.on_event(
                Event(
                    "restart",
                    f"{spent}: attempt {self.run.attempt} resumes from the last checkpoint "
                    f"(after {self.run.failures[-1]})",
                )
            )
            await self.sync_demands(driver)
            return
        self.finished_at = self.clock()
        if action is plan.Action.GIVE_UP:
            self.on_event(
                Event(
                    "gave up",
                    f"{self.spec.max_restarts} restarts used; last: {self.run.failures[-1]}",
                )
            )
        else:
            self.on_event(Event("succeeded", f"attempt {self.run.attempt}"))
        await self.sync_demands(driver)
        self.finished.set()

    # -- the summary ------------------------------------------------------------------------

    def summary(self) -> dict[str, object]:
        end = self.finished_at if self.finished_at is not None else self.clock()
        return {
            "job": self.spec.name,
            "workers": self.spec.workers,
            "gpus_per_worker": self.spec.gpus,
            "steps": self.spec.steps,
            "succeeded": self.run.phase is plan.Phase.SUCCEEDED,
            "restarts": self.run.restarts,
            "disruptions": self.run.disruptions,
            "attempts": self.run.attempt + 1,
            "failures": list(self.run.failures),
            "bundles": [list(b) for b in self.bundles],
            "refused_launches": self.refused_launches,
            "checkpoint_dir": self.spec.checkpoint_dir,
            "seconds": round(end - self.started_at, 3),
        }
