"""The job service: jobs submitted to queues, admitted whole by the queues' quotas
(``admission.py``), run as frameworks (``runner.py``), kept in the records (``store.py``) and
taken back after a restart in the same order.

A job's phase (``corral job get``):

| phase | what it means |
|---|---|
| ``Pending`` | in its queue; ``reason`` says why it is not admitted |
| ``QuotaReserved`` | admitted: its queue's quota is reserved, its framework is starting |
| ``Admitted`` | running: its framework launched its tasks |
| ``Evicting`` | preempted by its queue (or suspended, cancelled): its tasks are killed |
| ``Suspended`` | kept, not queued (``resume`` queues it again in its old place) |
| ``Succeeded``, ``Failed``, ``Cancelled`` | ended |
| ``Scheduled`` | a periodic job: it makes a run (a job of its own) at each scheduled time |

Bad input raises ``JobError`` (400), an unknown job ``UnknownJob`` (404), a job that exists
``JobExists`` (409); a caller without a grant ``Forbidden`` (403, naming the rule).

Tenancy is the scaffold's (``service/tenancy.py``): a job's owner is the principal that
submitted it; what it asks for (its framework, its demands' classes, tolerations and size) is
reviewed by the master **for the owner** at submission, and its framework launches on the
owner's behalf (the master checks again); reading and changing a job is for its owner and
those the master lets act for it. Which queues a principal may submit to is the master's too
(its ACL's ``jobs.queues`` grant), asked for the caller at each submission
(``Tenancy.may_submit``): one ACL, and a reloaded file counts without touching this service.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from corral.frameworks import sdk
from corral.frameworks.jobs import cron
from corral.frameworks.jobs.admission import Admission, State
from corral.frameworks.jobs.queues import RESOURCES, QueueConfig
from corral.frameworks.jobs.runner import (
    JobRunner,
    Placement,
    demands_of,
    framework_for,
    placed,
)
from corral.frameworks.jobs.spec import JobFile
from corral.frameworks.jobs.store import JobStore
from corral.frameworks.run_ids import new_run_id, with_run
from corral.frameworks.sdk.tls import Credentials
from corral.frameworks.service.http_api import Caller
from corral.frameworks.service.tenancy import Owner, Tenancy

log = structlog.get_logger("corral.jobs")

CYCLE_SECONDS = 0.25
DEFAULT_FAILOVER_TIMEOUT = 7 * 24 * 3600.0
EVENTS_KEPT = 1000

# Pending jobs per cluster queue in the status the web UI shows (status_document).
STATUS_PENDING = 20
PENDING, QUOTA_RESERVED, ADMITTED, EVICTING = "Pending", "QuotaReserved", "Admitted", "Evicting"
SUSPENDED, SUCCEEDED, FAILED, CANCELLED = "Suspended", "Succeeded", "Failed", "Cancelled"
SCHEDULED = "Scheduled"
ENDED = frozenset({SUCCEEDED, FAILED, CANCELLED})
RUNNING = frozenset({QUOTA_RESERVED, ADMITTED, EVICTING})


class JobError(ValueError):
    """Bad input (400)."""


class UnknownJob(LookupError):
    def __init__(self, name: str) -> None:
        super().__init__(f"no job {name!r}")


class JobExists(ValueError):
    """409."""


@dataclass
class Event:
    """A cluster-style event about a job (``GET /v1/events``, ``corral job history``)."""

    at: float
    job: str
    kind: str
    message: str


class JobService:
    def __init__(
        self,
        store: JobStore,
        config: QueueConfig,
        master: str,
        *,
        state_dir: Path,
        role: str = "*",
        failover_timeout: float = DEFAULT_FAILOVER_TIMEOUT,
        tenancy: Tenancy | None = None,
        tls: Credentials | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.config = config
        self.master = master
        self.state_dir = state_dir
        self.role = role
        self.failover_timeout = failover_timeout
        self.tenancy = tenancy or Tenancy(None)
        self.tls = tls
        self.clock = clock
        self.admission = Admission(config)
        self.runners: dict[str, JobRunner] = {}
        self.last_cycle_ms = 0.0
        self.cycles = 0
        self.preemptions = 0
        self._loop_task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()

    # -- start and stop -------------------------------------------------------------------

    async def start(self) -> None:
        """Take every job back from the records: admitted ones charged as they were and their
        frameworks failed over into, pending ones queued in their old order."""
        for rec in sorted(self.store.jobs(), key=lambda r: r["seq"]):
            phase = rec["phase"]
            if phase in ENDED or phase in (SUSPENDED, SCHEDULED):
                continue
            job = JobFile.from_json(rec["spec"])
            cq = self._cluster_queue(rec["queue"])
            if phase == PENDING:
                self.admission.submit(
                    rec["name"],
                    cq,
                    job.request,
                    rec["priority"],
                    rec["submitted"],
                    self._flavors(cq, job),
                    seq=rec["seq"],
                )
                continue
            self.admission.restore_admitted(
                rec["name"],
                cq,
                job.request,
                rec["priority"],
                rec["submitted"],
                rec["seq"],
                rec["flavor"],
                rec.get("admitted_at") or rec["submitted"],
                evicting=phase == EVICTING,
                reason=rec.get("reason", ""),
            )
            runner = self._runner(rec, job)
            if phase == EVICTING:
                # Evicting with nowhere to stop to (no cancel or suspend): preempted.
                preempted = not rec.get("stopping_to")
                runner.stop(rec.get("reason", "evicting"), preempted=preempted)
        self._loop_task = asyncio.get_running_loop().create_task(self._loop(), name="jobs-loop")

    async def close(self) -> None:
        """Stop acting: every job's tasks keep running for the next service."""
        task, self._loop_task = self._loop_task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        await asyncio.gather(*(r.close() for r in self.runners.values()))

    def _runner(self, rec: dict[str, Any], job: JobFile) -> JobRunner:
        flavor = self.config.flavors[rec["flavor"]]
        where = Placement(flavor.name, flavor.attributes, flavor.tolerations)
        running = placed(job, where, self.state_dir / "checkpoints")
        runner = JobRunner(
            self.store,
            running,
            self.master,
            self.role,
            self.failover_timeout,
            self._event,
            tls=self.tls,
        )
        self.runners[job.name] = runner
        runner.start()
        return runner

    # -- the loop -------------------------------------------------------------------------

    async def _loop(self) -> None:
        while True:
            try:
                self.step()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("job service step failed")
                raise
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), CYCLE_SECONDS)
            self._wake.clear()

    def step(self) -> None:
        """One turn: periodic jobs' runs, runners that ended, an admission cycle."""
        now = self.clock()
        self._periodic(now)
        self._reap()
        started = time.perf_counter()
        result = self.admission.cycle(now)
        self.last_cycle_ms = (time.perf_counter() - started) * 1000
        self.cycles += 1
        for p in result.preempted:
            self.preemptions += 1
            self.store.set_fields(p.victim, (EVICTING, p.reason), phase=EVICTING, reason=p.reason)
            runner = self.runners.get(p.victim)
            if runner is not None:
                runner.stop(p.reason, preempted=True)
        for a in result.admitted:
            rec = self.store.job(a.name)
            assert rec is not None
            borrowing = " (borrowing from its cohort)" if a.borrowing else ""
            self.store.set_fields(
                a.name,
                (QUOTA_RESERVED, f"queue {a.cluster_queue}, flavor {a.flavor}{borrowing}"),
                phase=QUOTA_RESERVED,
                flavor=a.flavor,
                admitted_at=now,
                reason="",
            )
            rec = self.store.job(a.name)
            assert rec is not None
            self._runner(rec, JobFile.from_json(rec["spec"]))

    def _reap(self) -> None:
        for name, runner in list(self.runners.items()):
            rec = self.store.job(name)
            if rec is None:
                continue
            if rec["phase"] == QUOTA_RESERVED and runner.launched.is_set():
                self.store.set_fields(name, (ADMITTED, "its tasks are launched"), phase=ADMITTED)
            if not runner.done.is_set():
                continue
            del self.runners[name]
            if runner.stop_reason:
                self._evicted(name, rec, runner.stop_reason)
                continue
            s = runner.summary
            phase = SUCCEEDED if s.get("ok") else FAILED
            why = s.get("refused") or _summary_line(s)
            self.admission.finish(name)
            self.store.set_fields(
                name, (phase, why), phase=phase, reason=why, summary=s, ended_at=self.clock()
            )
            self._ran(rec)

    def _evicted(self, name: str, rec: dict[str, Any], reason: str) -> None:
        target = rec.get("stopping_to", "")
        if target in (CANCELLED, SUSPENDED):
            self.admission.finish(name)
            fields: dict[str, Any] = {"phase": target, "stopping_to": "", "flavor": ""}
            if target == CANCELLED:
                fields["ended_at"] = self.clock()
            self.store.set_fields(name, (target, reason), **fields)
            if target == CANCELLED:
                self._ran(rec)
            return
        self.admission.evicted(name)
        self.store.set_fields(
            name,
            ("Requeued", f"its tasks ended; back in queue {rec['queue']} in its old place"),
            phase=PENDING,
            flavor="",
            reason=self.admission.explain(name).removeprefix("Pending: "),
        )

    def _ran(self, rec: dict[str, Any]) -> None:
        """A periodic job's run ended: the parent's history says so, old runs are pruned."""
        parent = rec.get("parent", "")
        if not parent:
            return
        p = self.store.job(parent)
        if p is None:
            return
        schedule = cron.Schedule.from_json(p["spec"]["schedule"])
        finished = [
            cron.FinishedRun(r["name"], r["phase"] == SUCCEEDED, r.get("ended_at") or 0.0)
            for r in self.store.runs_of(parent)
            if r["phase"] in ENDED
        ]
        for old in cron.prune(schedule, finished):
            self.store.delete_job(old)

    # -- periodic jobs --------------------------------------------------------------------

    def _periodic(self, now: float) -> None:
        for name in sorted(self.store.periodic):
            rec = self.store.job(name)
            if rec is None or rec["phase"] != SCHEDULED:
                continue
            job = JobFile.from_json(rec["spec"])
            assert job.schedule is not None
            runs = self.store.runs_of(rec["name"])
            active = [
                r["name"] for r in runs if r["phase"] not in ENDED and r["phase"] != SUSPENDED
            ]
            schedule = job.schedule
            if rec.get("suspended"):
                continue
            d = cron.decide(
                rec["name"],
                schedule,
                rec["submitted"],
                rec.get("last_schedule"),
                now,
                active,
                frozenset(r["name"] for r in runs),
            )
            notes = [n for n in d.notes if n != rec.get("last_note")]
            for n in notes:
                self.store.note(rec["name"], "Schedule", n)
            if notes:
                self.store.set_fields(rec["name"], last_note=d.notes[-1])
            for victim in d.cancel:
                self._cancel(
                    victim,
                    reason=f"replaced by the run of {cron.when(d.start or now, schedule.time_zone)}"
                    " (concurrency_policy Replace)",
                )
            if d.last_schedule is not None:
                self.store.set_fields(rec["name"], last_schedule=d.last_schedule)
            if d.start is not None:
                spec = {k: v for k, v in rec["spec"].items() if k not in ("schedule", "suspend")}
                spec["name"] = d.run_name
                self._queue_new(JobFile.from_json(spec), owner_of(rec), parent=rec["name"], now=now)

    # -- what callers do ------------------------------------------------------------------

    async def submit(self, body: Any, caller: Caller) -> dict[str, Any]:
        try:
            job = JobFile.from_json(body)
        except ValueError as err:
            raise JobError(str(err)) from None
        cq = self.config.cluster_queue_of(job.queue)
        if cq is None:
            known = ", ".join(sorted(self.config.local_queues)) or "none"
            raise JobError(f"queue: no queue {job.queue!r} (queues: {known})")
        if self.config.priority(job.priority_class) is None:
            known = ", ".join(sorted(self.config.priority_classes))
            raise JobError(
                f"priority_class: unknown class {job.priority_class!r} (classes: {known})"
            )
        if not self._flavors(cq.name, job) and job.constraints:
            raise JobError(
                f"constraints: none of queue {job.queue}'s flavors has agents they allow "
                f"({', '.join(str(c) for c in job.constraints)})"
            )
        await self.tenancy.may_submit(caller, job.queue)
        if self.store.job(job.name) is not None:
            raise JobExists(f"job {job.name!r} exists; delete it, or submit under another name")
        owner = self.tenancy.owner_of(caller)
        # The master reviews what the job asks for as its owner (never the service's grants).
        info = framework_for(job, self.role, on_behalf_of=owner.principal())
        await self.tenancy.may_ask(owner, info, demands_of(job), "", f"job {job.name}")
        if self.store.job(job.name) is not None:  # submitted meanwhile
            raise JobExists(f"job {job.name!r} exists; delete it, or submit under another name")
        now = self.clock()
        if job.schedule is not None:
            self.store.add_job(
                self._record(job, owner, now, phase=SUSPENDED if job.suspend else SCHEDULED),
                ("Submitted", f"periodic: {job.schedule.cron} ({job.schedule.time_zone})"),
            )
            self._wake.set()
            return self._view(self._rec(job.name), detail=True)
        self._queue_new(job, owner, now=now)
        self._wake.set()
        return self._view(self._rec(job.name), detail=True)

    def _queue_new(self, job: JobFile, owner: Owner, now: float, parent: str = "") -> None:
        phase = SUSPENDED if job.suspend else PENDING
        rec = self._record(job, owner, now, phase=phase, parent=parent)
        self.store.add_job(
            rec, ("Submitted", f"to queue {job.queue}" + (f" by {parent}" if parent else ""))
        )
        if phase == PENDING:
            self._enqueue(rec, job)

    def _enqueue(self, rec: dict[str, Any], job: JobFile) -> None:
        cq = self._cluster_queue(rec["queue"])
        self.admission.submit(
            rec["name"],
            cq,
            job.request,
            rec["priority"],
            rec["submitted"],
            self._flavors(cq, job),
            seq=rec["seq"],
        )

    def _record(
        self, job: JobFile, owner: Owner, now: float, phase: str, parent: str = ""
    ) -> dict[str, Any]:
        return {
            "name": job.name,
            "kind": job.kind,
            "spec": dict(job.raw or {}),
            "owner": owner.to_json(),
            "queue": job.queue,
            "priority_class": job.priority_class,
            "priority": self.config.priority(job.priority_class),
            "submitted": now,
            "phase": phase,
            "reason": "",
            "flavor": "",
            "framework_id": "",
            "run_id": new_run_id(),
            "parent": parent,
            "request": dict(zip(RESOURCES, job.request, strict=True)),
        }

    def _cluster_queue(self, queue: str) -> str:
        cq = self.config.cluster_queue_of(queue)
        if cq is None:
            raise JobError(f"queue {queue!r} is not in the configuration")
        return cq.name

    def _flavors(self, cq: str, job: JobFile) -> tuple[str, ...] | None:
        if not job.constraints:
            return None
        return tuple(
            fq.flavor
            for fq in self.config.cluster_queues[cq].flavors
            if job.allows_flavor(dict(self.config.flavors[fq.flavor].attributes))
        )

    def _rec(self, name: str) -> dict[str, Any]:
        rec = self.store.job(name)
        if rec is None:
            raise UnknownJob(name)
        return rec

    async def _job(self, name: str, caller: Caller, what: str) -> dict[str, Any]:
        """The job's record, if ``caller`` may ``what`` it: its owner, or one the master lets
        act for the owner (403 otherwise)."""
        rec = self._rec(name)
        await self.tenancy.may_act_for(caller, owner_of(rec), f"{what} job {name}")
        return rec

    async def cancel(self, name: str, caller: Caller) -> dict[str, Any]:
        rec = await self._job(name, caller, "cancel")
        self._stop(rec, CANCELLED, f"cancelled by {caller}")
        return self._view(self._rec(name), detail=True)

    def _cancel(self, name: str, reason: str) -> None:
        rec = self.store.job(name)
        if rec is not None and rec["phase"] not in ENDED:
            self._stop(rec, CANCELLED, reason)

    async def suspend(self, name: str, caller: Caller) -> dict[str, Any]:
        rec = await self._job(name, caller, "suspend")
        self._stop(rec, SUSPENDED, f"suspended by {caller}")
        return self._view(self._rec(name), detail=True)

    def _stop(self, rec: dict[str, Any], target: str, why: str) -> None:
        name, phase = rec["name"], rec["phase"]
        if phase in ENDED:
            raise JobError(f"job {name} has ended ({phase})")
        if rec.get("spec", {}).get("schedule"):
            # A periodic job: suspending stops new runs; cancelling ends it (runs go on).
            fields: dict[str, Any] = {"suspended": target == SUSPENDED}
            if target == CANCELLED:
                fields["phase"] = CANCELLED
                fields["ended_at"] = self.clock()
            else:
                fields["phase"] = SUSPENDED
            self.store.set_fields(name, (target, why), **fields)
            return
        if phase == SUSPENDED:
            if target == CANCELLED:
                self.store.set_fields(name, (target, why), phase=target, ended_at=self.clock())
            return
        if phase == PENDING:
            self.admission.finish(name)
            fields = {"phase": target, "reason": why}
            if target == CANCELLED:
                fields["ended_at"] = self.clock()
            self.store.set_fields(name, (target, why), **fields)
            if target == CANCELLED:
                self._ran(rec)
        else:
            self.admission.evict(name, why)
            self.store.set_fields(
                name, (EVICTING, why), phase=EVICTING, reason=why, stopping_to=target
            )
            runner = self.runners.get(name)
            if runner is not None:
                runner.stop(why)
        self._wake.set()

    async def resume(self, name: str, caller: Caller) -> dict[str, Any]:
        rec = await self._job(name, caller, "resume")
        if rec["phase"] != SUSPENDED:
            raise JobError(f"job {name} is not suspended ({rec['phase']})")
        job = JobFile.from_json(rec["spec"])
        if job.schedule is not None:
            self.store.set_fields(
                name, ("Resumed", f"by {caller}"), phase=SCHEDULED, suspended=False
            )
        else:
            self.store.set_fields(
                name, ("Resumed", f"by {caller}; back in queue {rec['queue']}"), phase=PENDING
            )
            self._enqueue(rec, job)
        self._wake.set()
        return self._view(self._rec(name), detail=True)

    # -- reading --------------------------------------------------------------------------

    async def get(self, name: str, caller: Caller) -> dict[str, Any]:
        rec = await self._job(name, caller, "read")
        return self._view(rec, detail=True)

    def _view(self, rec: dict[str, Any], detail: bool = False) -> dict[str, Any]:
        name = rec["name"]
        runner = self.runners.get(name)
        w = self.admission.workloads.get(name)
        out = {
            "name": name,
            "kind": rec["kind"],
            "queue": rec["queue"],
            "cluster_queue": self.config.local_queues[rec["queue"]].cluster_queue
            if rec["queue"] in self.config.local_queues
            else "",
            "owner": owner_of(rec).name,
            "priority_class": rec["priority_class"],
            "priority": rec["priority"],
            "phase": rec["phase"],
            "reason": self.admission.explain(name).split(": ", 1)[-1]
            if w is not None and w.state is State.PENDING
            else rec.get("reason", ""),
            "flavor": rec.get("flavor", ""),
            "submitted": rec["submitted"],
            "admitted_at": rec.get("admitted_at"),
            "ended_at": rec.get("ended_at"),
            "position": self.admission.position(name),
            "request": rec["request"],
            "parent": rec.get("parent", ""),
            "framework_id": rec.get("framework_id", ""),
        }
        if runner is not None:
            out["progress"] = runner.progress()
        elif rec.get("summary"):
            out["progress"] = rec["summary"]
        if detail:
            out["spec"] = rec["spec"]
            out["explain"] = self.admission.explain(name) if w is not None else rec["phase"]
            out["tasks"] = self._tasks(rec, runner)
            if rec["spec"].get("schedule"):
                out["schedule"] = rec["spec"]["schedule"]
                out["last_schedule"] = rec.get("last_schedule")
                out["runs"] = sorted(r["name"] for r in self.store.runs_of(name))
        return out

    def _tasks(self, rec: dict[str, Any], runner: JobRunner | None) -> list[dict[str, Any]]:
        """Each task's latest attempt (batch) or the current attempt's members (gang), with
        its agent while it runs: what ``corral job logs`` reads."""
        run = rec["run_id"]
        if rec["kind"] == "batch":
            spec = JobFile.from_json(rec["spec"]).batch
            assert spec is not None
            out = []
            for t in self.store.tasks(rec["name"]):
                if not t["attempts"]:
                    continue
                stage = spec.stages[t["stage"]].name
                task_id = t["live"] or with_run(f"{stage}-{t['index']}.{t['attempts'] - 1}", run)
                state = "live" if t["live"] else "succeeded" if t["succeeded"] else "ended"
                out.append({"task_id": task_id, "agent_id": t.get("agent", ""), "state": state})
            return out
        g = self.store.gang(rec["name"])
        if g is None:
            return []
        live = g.get("live", {})
        return [
            {
                "task_id": (tid := with_run(f"{rec['name']}-a{g['attempt']}-rank{r}", run)),
                "agent_id": live.get(tid, ""),
                "state": "live" if tid in live else "ended",
            }
            for r in range(g["workers"])
        ]

    async def jobs(self, caller: Caller, queue: str | None = None) -> list[dict[str, Any]]:
        """The jobs ``caller`` may read (its own, and those of owners the master lets it act
        for), in submission order."""
        found = [r for r in self.store.jobs() if queue is None or r["queue"] == queue]
        visible = await self.tenancy.visible(caller, {owner_of(r) for r in found})
        return [
            self._view(rec)
            for rec in sorted(found, key=lambda r: r["seq"])
            if owner_of(rec).name in visible
        ]

    async def history(self, name: str, caller: Caller) -> list[dict[str, Any]]:
        await self._job(name, caller, "read")
        return self.store.history(name)

    async def events(self, caller: Caller, limit: int = 200) -> list[dict[str, Any]]:
        found = self.store.recent_events(EVENTS_KEPT)
        owners = {n: owner_of(r) for n in {e["job"] for e in found} if (r := self.store.job(n))}
        visible = await self.tenancy.visible(caller, set(owners.values()))
        out = [e for e in found if e["job"] in owners and owners[e["job"]].name in visible]
        return out[-limit:]

    async def why_pending(self, name: str, caller: Caller) -> list[str]:
        """The master's why-pending for an admitted job whose tasks wait to be placed."""
        await self._job(name, caller, "read")
        runner = self.runners.get(name)
        if runner is None or runner.driver is None or not runner.framework_id:
            return []
        driver = runner.driver
        try:
            pending = await sdk.why_pending(
                driver.address or self.master, runner.framework_id, timeout=2.0, tls=driver.tls
            )
        except sdk.CallError:
            return []
        return [f"{p.name}: {p.unmet} of {p.count} unplaced: {p.summary}" for p in pending]

    def queues(self) -> dict[str, Any]:
        rows = []
        for s in self.admission.status():
            rows.append(
                {
                    "cluster_queue": s.cluster_queue,
                    "flavor": s.flavor,
                    "cohort": s.cohort,
                    "strategy": self.config.cluster_queues[s.cluster_queue].strategy.value,
                    "nominal": _resources(s.nominal),
                    "used": _resources(s.used),
                    "borrowed": _resources(s.borrowed),
                    "lent": _resources(s.lent),
                    "pending_jobs": s.pending,
                    "admitted_jobs": s.admitted,
                }
            )
        return {
            "queues": rows,
            "local_queues": {n: lq.cluster_queue for n, lq in self.config.local_queues.items()},
            "last_cycle_ms": round(self.last_cycle_ms, 3),
        }

    def status_document(self) -> dict[str, Any]:
        """What the master's web UI shows of this service (its queues view), published every
        few seconds (frameworks/service/status_loop.py): ``queues()``, and the head of each
        cluster queue's pending jobs (the first ``STATUS_PENDING``, in admission order) with
        why each waits."""
        now = self.clock()
        pending = []
        for cq, waiting in self.admission.pending.items():
            for position, w in enumerate(waiting[:STATUS_PENDING]):
                pending.append(
                    {
                        "name": w.name,
                        "cluster_queue": cq,
                        "position": position,
                        "priority": w.priority,
                        "waited_seconds": round(max(0.0, now - w.submitted), 3),
                        "reason": self.admission.explain(w.name).split(": ", 1)[-1],
                    }
                )
        return {**self.queues(), "pending": pending, "cycles": self.cycles}

    def _event(self, job: str, kind: str, message: str) -> None:
        log.info(message, job=job, kind=kind)
        if self.store.job(job) is not None:
            self.store.note(job, kind, message)


def owner_of(rec: dict[str, Any]) -> Owner:
    return Owner.from_json(rec.get("owner"))


def _resources(v: tuple[float, ...]) -> dict[str, float | None]:
    return {
        r: (None if x == float("inf") else round(x, 6))
        for r, x in zip(RESOURCES, v, strict=True)
        if x != float("inf")
    }


def _summary_line(s: dict[str, Any]) -> str:
    if "tasks" in s:
        return (
            f"{s['succeeded']} of {s['tasks']} tasks succeeded, {s.get('failed', 0)} failed; "
            f"{s.get('retries', 0)} retries"
        )
    return (
        f"gang {'trained' if s.get('succeeded') else 'failed'}; {s.get('restarts', 0)} restarts, "
        f"{s.get('attempts', 1)} attempts"
    )
