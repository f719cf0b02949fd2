"""One admitted job of the job service: its framework's driver and scheduler (the shipped batch
or gang scheduler), and what of it the records keep.

Each job runs as its own framework (``job:NAME``), as each serving app does: its role,
tolerations and GPU capability are the framework's, and the master explains and keeps tasks
through a failover per framework. It subscribes with the service's long failover timeout, so
a job service that dies leaves its tasks running; the next one fails over into the same
framework id, takes the job back from the records (``Job.restore``, ``Run.restore``: finished
tasks stay finished) and the SDK asks the master about every task (reconciliation).

Ends: the job finishes (``done`` with its summary), or the service ``stop``s it to evict it
(preempted by its queue, suspended, cancelled): the framework is torn down, the master kills
its live tasks, and those attempts go back to the job's queue without spending a retry. A
preempted job's live tasks are first killed through the master's preemption (``Kill`` with
reason PREEMPTED and the queue's reason), so each task's KILLED status says which queue took
it back (``corral describe task``), not only that its framework went away.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import structlog

from corral.frameworks import sdk
from corral.frameworks.batch.job import Job
from corral.frameworks.batch.scheduler import BatchScheduler
from corral.frameworks.framework_info import framework_info
from corral.frameworks.gang import plan
from corral.frameworks.gang.scheduler import GangScheduler
from corral.frameworks.jobs.spec import CHECKPOINT_PLACEHOLDER, JobFile
from corral.frameworks.jobs.store import JobStore
from corral.frameworks.sdk.placement import Constraint, Toleration
from corral.frameworks.sdk.tls import Credentials
from corral.frameworks.service.records import Fenced
from corral.frameworks.service.tenancy import NOBODY, Owner

log = structlog.get_logger("corral.jobs")

TICK_SECONDS = 0.5
KILLS_AT_ONCE = 64  # a preempted job's kills in flight at once
MAX_KILL_MESSAGE = 1024  # the master's limit on a kill's message (KillRequest.message)
RETRY_SECONDS = 2.0
# A subscription refused with these means the framework id will never be accepted again.
_GONE = frozenset({grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.NOT_FOUND})


@dataclasses.dataclass(frozen=True)
class Placement:
    """What admission adds to a job: its flavor's agents (constraints) and taints."""

    flavor: str
    attributes: tuple[tuple[str, str], ...] = ()
    tolerations: tuple[str, ...] = ()


def placed(job: JobFile, where: Placement, checkpoints: Path) -> JobFile:
    """The job as it runs in its flavor: the flavor's attributes as constraints, its
    tolerations added, and a gang's checkpoint folder made under the service's state."""
    extra_c = tuple(Constraint.equals(k, v) for k, v in where.attributes)
    extra_t = tuple(Toleration.parse(t) for t in where.tolerations)
    if job.batch is not None:
        b = job.batch
        return dataclasses.replace(
            job,
            batch=dataclasses.replace(
                b, constraints=b.constraints + extra_c, tolerations=b.tolerations + extra_t
            ),
        )
    assert job.gang is not None
    g = job.gang
    directory = g.checkpoint_dir
    if directory == CHECKPOINT_PLACEHOLDER:
        directory = str(checkpoints / job.name)
        Path(directory).mkdir(parents=True, exist_ok=True)
    return dataclasses.replace(
        job,
        gang=dataclasses.replace(
            g,
            constraints=g.constraints + extra_c,
            tolerations=g.tolerations + extra_t,
            checkpoint_dir=directory,
        ),
    )


def framework_for(job: JobFile, role: str, **fields: Any) -> sdk.FrameworkInfo:
    """The framework a job runs as (``job:NAME``): its GPU capability, tolerations and
    constraints; ``fields``: the rest of FrameworkInfo (id, failover timeout, owner)."""
    if job.batch is not None:
        b = job.batch
        return framework_info(
            f"job:{job.name}",
            role,
            gpus=any(s.gpus > 0 for s in b.stages),
            revocable=b.revocable,
            tolerations=b.tolerations,
            constraints=b.constraints,
            **fields,
        )
    assert job.gang is not None
    g = job.gang
    return framework_info(
        f"job:{job.name}",
        role,
        gpus=g.gpus > 0,
        tolerations=g.tolerations,
        constraints=g.constraints,
        **fields,
    )


def demands_of(job: JobFile) -> list[sdk.Demand]:
    """What the job will ask the master for: a demand per stage (its tasks at once, within
    ``max_cpus``), or the gang's (``min_member`` = workers). The master reviews these for the
    job's owner at submission (their classes, tolerations and size against its cap)."""
    if job.gang is not None:
        return [plan.demand(job.gang, 0)]
    assert job.batch is not None
    b = job.batch
    out = []
    for st in b.stages:
        n = b.at_once(st)
        out.append(
            sdk.Demand(
                st.name,
                n,
                cpus=st.cpus,
                mem=st.mem,
                disk=st.disk,
                gpus=st.gpus,
                priority_class=b.priority_class,
                constraints=b.constraints,
                tolerations=b.tolerations,
            )
        )
    return out


def preempted_message(reason: str) -> str:
    """What a preempted job's tasks' KILLED statuses say: the admission's reason, which names
    the queue (the reason PREEMPTED already says "preempted"), within the master's limit."""
    return reason.removeprefix("preempted: ")[:MAX_KILL_MESSAGE]


class JobRunner:
    def __init__(
        self,
        store: JobStore,
        job: JobFile,
        master: str,
        role: str,
        failover_timeout: float,
        on_event: Callable[[str, str, str], None],
        tls: Credentials | None = None,
        owner: Owner = NOBODY,
    ) -> None:
        self.store = store
        self.owner = owner  # the master authorizes its framework as the owner
        self.job = job
        self.name = job.name
        self.master = master
        self.role = role
        self.failover_timeout = failover_timeout
        self.on_event = on_event  # (job, kind, message)
        self.tls = tls
        rec = store.job(job.name)
        assert rec is not None
        self.framework_id: str = rec.get("framework_id", "")
        self.run_id: str = rec["run_id"]
        self.scheduler: BatchScheduler | GangScheduler = self._scheduler()
        self.driver: sdk.Driver | None = None
        self.launched = asyncio.Event()  # a task of it has been launched (Admitted)
        self.done = asyncio.Event()  # ended: finished, or stopped and torn down
        self.summary: dict[str, Any] = {}
        self.stop_reason = ""  # why the service stops it ("": it runs to its end)
        self.preempted = False  # stopped by its queue's preemption (its tasks say so)
        self._task: asyncio.Task[None] | None = None
        if self.live_tasks():
            self.launched.set()

    def _scheduler(self) -> BatchScheduler | GangScheduler:
        if self.job.batch is not None:
            saved = self.store.tasks(self.name)
            job = Job.restore(self.job.batch, self.run_id, saved) if saved else None
            return BatchScheduler(
                self.job.batch,
                self._batch_event,
                run_id=self.run_id,
                job=job,
                saver=_BatchSaver(self),
            )
        assert self.job.gang is not None
        saved_run = self.store.gang(self.name)
        run = plan.Run.restore(saved_run) if saved_run else None
        return GangScheduler(
            self.job.gang, self._gang_event, run_id=self.run_id, run=run, saver=_GangSaver(self)
        )

    # -- what the service reads -----------------------------------------------------------

    def live_tasks(self) -> list[str]:
        if isinstance(self.scheduler, BatchScheduler):
            return sorted(self.scheduler.job.live)
        return sorted(self.scheduler.run.live)

    def progress(self) -> dict[str, Any]:
        if isinstance(self.scheduler, BatchScheduler):
            counts = self.scheduler.job.counts()
            return {
                **counts,
                "running": len(self.scheduler.job.live),
                "stage": self.scheduler.job.current.name if not self.scheduler.job.done else "",
            }
        run = self.scheduler.run
        return {
            "workers": run.workers,
            "attempt": run.attempt,
            "restarts": run.restarts,
            "phase": run.phase.value,
            "running": len(run.live),
        }

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"job-{self.name}")

    def stop(self, reason: str, *, preempted: bool = False) -> None:
        """End it now (preempted, suspended, cancelled): tear the framework down, so the master
        kills its live tasks; ``done`` is set once it is. ``preempted``: by its queue (reclaim,
        or a job of higher priority): its tasks are killed as preempted, saying ``reason``."""
        if not self.stop_reason:
            self.stop_reason = reason
            self.preempted = preempted

    async def close(self) -> None:
        """The service stops: leave the job running without us (its failover timeout)."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        if isinstance(self.scheduler, BatchScheduler):
            await self.scheduler.settle()

    async def _run(self) -> None:
        while not self.done.is_set():
            try:
                await self._subscribed_loop()
            except asyncio.CancelledError:
                raise
            except Fenced:
                raise
            except (sdk.FrameworkError, sdk.CallError) as err:
                if isinstance(err, sdk.CallError) and err.code not in _GONE:
                    self.on_event(self.name, "Disconnected", f"{err}; retrying")
                else:
                    self._framework_gone(str(err))
            except Exception as err:  # a bug must not take the other jobs down: log, retry
                log.exception("job loop failed", job=self.name)
                self.on_event(self.name, "InternalError", f"{err!r}; retrying")
            finally:
                self.driver = None
            if not self.done.is_set():
                await asyncio.sleep(RETRY_SECONDS)

    def _info(self) -> sdk.FrameworkInfo:
        return framework_for(
            self.job,
            self.role,
            id=self.framework_id,
            failover_timeout=self.failover_timeout,
            on_behalf_of=self.owner.principal(),
        )

    async def _subscribed_loop(self) -> None:
        driver = sdk.Driver(
            self.scheduler, self._info(), self.master, connect_timeout=None, tls=self.tls
        )
        async with driver:
            self.driver = driver
            if driver.framework_id != self.framework_id:
                self.framework_id = driver.framework_id
                self.store.set_fields(self.name, framework_id=self.framework_id)
            sched = self.scheduler
            if isinstance(sched, GangScheduler) and sched.run.phase is plan.Phase.STOPPING:
                # Taken back while killing a failed attempt's survivors: kill them again.
                for task_id, agent_id in list(sched.run.live.items()):
                    with contextlib.suppress(sdk.DriverError):
                        await driver.kill(task_id, agent_id)
            waiting = asyncio.ensure_future(driver.wait())
            try:
                while not waiting.done():
                    await asyncio.wait(
                        {waiting, asyncio.ensure_future(sched.finished.wait())},
                        timeout=TICK_SECONDS,
                        return_when=asyncio.FIRST_COMPLETED,
                    )
                    if waiting.done():
                        break
                    if self.stop_reason:
                        await self._evict(driver)
                        return
                    if sched.finished.is_set():
                        await self._finish(driver)
                        return
                waiting.result()
            finally:
                waiting.cancel()

    async def _finish(self, driver: sdk.Driver) -> None:
        sched = self.scheduler
        if isinstance(sched, BatchScheduler):
            await sched.settle()
        summary = sched.summary()
        failure = sched.failure
        try:
            await driver.teardown()
        except sdk.CallError as err:
            log.info("teardown failed", job=self.name, error=str(err))
        if failure is not None:
            summary["failed"] = summary.get("failed", 0) or 1
            summary["refused"] = f"{failure.code.name}: {failure.message}"
        if isinstance(sched, BatchScheduler):
            summary["ok"] = failure is None and summary["succeeded"] == summary["tasks"]
        else:
            summary["ok"] = failure is None and bool(summary["succeeded"])
        self.summary = summary
        self.done.set()

    async def _evict(self, driver: sdk.Driver) -> None:
        """Tear down (the master kills its live tasks); their attempts go back to the queue
        without spending a retry. The scheduler launches nothing from here on: a task launched
        between the kills and the teardown would only be killed again."""
        self.scheduler.closing = True
        if self.preempted:
            await self._kill_preempted(driver)
        try:
            await driver.teardown()
        except sdk.CallError as err:
            log.info("teardown failed", job=self.name, error=str(err))
        self._forget_framework()
        self.done.set()

    async def _kill_preempted(self, driver: sdk.Driver) -> None:
        """Kill the live tasks as preempted, saying why (the master keeps the cause through
        the teardown that follows at once, and its KILLED statuses carry it)."""
        why = preempted_message(self.stop_reason)
        live = self.live_tasks()
        bound = asyncio.Semaphore(KILLS_AT_ONCE)

        async def kill(task_id: str) -> bool:
            async with bound:
                try:
                    await driver.kill(task_id, preempted=why)
                except sdk.DriverError as err:  # ended meanwhile: the teardown ends the rest
                    log.info("preempting kill failed", job=self.name, task=task_id, error=str(err))
                    return False
                return True

        killed = sum(await asyncio.gather(*(kill(t) for t in live)))
        if live:
            self.on_event(
                self.name,
                "Preempted",
                f"{killed} of {len(live)} running tasks killed as preempted: {why}",
            )

    def _forget_framework(self) -> None:
        sched = self.scheduler
        if isinstance(sched, BatchScheduler):
            touched = sched.job.disrupted_all()
            if touched:
                self.store.save_tasks(self.name, sched.job, touched)
        else:
            sched.run.disrupted_all()
            self.store.save_gang(self.name, sched.run.saved())
        self.framework_id = ""
        self.store.set_fields(self.name, framework_id="")

    def _framework_gone(self, why: str) -> None:
        """The master no longer has its framework (removed after its failover timeout, or
        torn down by someone else): its tasks are gone with it. Start afresh, keeping what
        finished."""
        self.on_event(self.name, "FrameworkGone", f"framework {self.framework_id} is gone ({why})")
        self._forget_framework()
        self.scheduler = self._scheduler()
        if self.stop_reason:
            self.done.set()

    # -- events ---------------------------------------------------------------------------

    def _batch_event(self, e: Any) -> None:
        if e.kind == "launched":
            self.launched.set()
        elif e.kind in ("gave up", "refused", "stage"):
            self.on_event(self.name, _title(e.kind), f"{e.task_id} {e.detail}".strip())

    def _gang_event(self, e: Any) -> None:
        if e.kind == "placed":
            self.launched.set()
        self.on_event(self.name, _title(e.kind), e.detail)


def _title(kind: str) -> str:
    return "".join(w.capitalize() for w in kind.split())


class _BatchSaver:
    def __init__(self, runner: JobRunner) -> None:
        self.runner = runner

    def save(self, job: Job, tasks: list[tuple[int, int]], agent_id: str = "") -> None:
        self.runner.store.save_tasks(self.runner.name, job, tasks, agent_id)


class _GangSaver:
    def __init__(self, runner: JobRunner) -> None:
        self.runner = runner

    def save(self, saved: dict[str, Any]) -> None:
        self.runner.store.save_gang(self.runner.name, saved)


def now() -> float:
    return time.time()
