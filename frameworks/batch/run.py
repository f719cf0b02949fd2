"""Running a batch job against a master: subscribe, run every task, tear down quietly.

The run ends one of four ways, each with its summary: every task ended (torn down); the master
refused the job's demand for good (torn down, the refusal raised); SIGINT or SIGTERM (torn down,
its live tasks killed, or with ``keep_running`` left to the master to fail over); tasks waited
``give_up_after`` seconds with none launched or ended (torn down). While tasks wait on the
master, the master's reason is asked every ``check_every`` seconds (``sdk.why_pending``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from corral.frameworks import sdk
from corral.frameworks.batch.job import JobSpec
from corral.frameworks.batch.progress import BarProgress, LineProgress, summary_text
from corral.frameworks.batch.scheduler import BatchScheduler, Event
from corral.frameworks.framework_info import framework_info
from corral.frameworks.job_loop import JobTerms, run_to_end

CHECK_SECONDS = 5.0  # how often the master is asked why tasks wait, while they do


async def run_job(
    spec: JobSpec,
    master: str = sdk.DEFAULT_MASTER,
    *,
    role: str = "*",
    connect_timeout: float = 10,
    on_event: Callable[[Event], None] | None = None,
    scheduler: BatchScheduler | None = None,
    stop: sdk.StopSignals | None = None,
    keep_running: bool = False,
    give_up_after: float | None = None,
    check_every: float = CHECK_SECONDS,
    tick: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Run ``spec`` until every task has ended for good, ``stop`` fires or the job gives up;
    the summary (``BatchScheduler.summary`` plus how it ended: ``stopped_by``, ``gave_up``,
    ``killed``, ``left_running``, ``framework_id``). A demand the master refuses for good
    raises its ``CallError`` after tearing down.

    The framework is torn down at the end (nothing of it stays on the master), from outside the
    status callback, once its last demand update has returned; with ``keep_running`` a stop
    leaves it (and its tasks) to the master for its failover timeout instead. ``tick`` is
    called every second while it runs (``--progress lines`` says the job's status by it)."""
    batch = scheduler or BatchScheduler(spec, on_event or (lambda e: None))
    info = framework_info(
        f"batch:{spec.name}",
        role,
        gpus=any(s.gpus > 0 for s in spec.stages),
        revocable=spec.revocable,
        tolerations=spec.tolerations,
        constraints=spec.constraints,
    )
    terms = JobTerms(
        noun="tasks",
        live=lambda: len(batch.job.live),
        note=lambda kind, detail: batch.on_event(Event(kind, detail=detail)),
        gave_up=lambda after, why: f"no task launched or ended in {after:g} s; {why}",
        settle=batch.settle,
        tick=tick,
    )
    ending = await run_to_end(
        sdk.Driver(batch, info, master, connect_timeout=connect_timeout),
        batch,
        terms,
        stop=stop,
        keep_running=keep_running,
        give_up_after=give_up_after,
        check_every=check_every,
    )
    return {**batch.summary(), **ending}


async def main(
    spec: JobSpec,
    master: str = sdk.DEFAULT_MASTER,
    role: str = "*",
    connect_timeout: float = 10,
    *,
    progress: str = "auto",
    json_out: str | Path | None = None,
    keep_running: bool = False,
    give_up_after: float | None = None,
    out: TextIO = sys.stdout,
) -> int:
    """``corral run batch``: run the job with progress until it ends, SIGINT/SIGTERM or
    ``give_up_after``; print the summary; 0 if every task succeeded, 1 otherwise."""
    scheduler = BatchScheduler(spec)
    if progress == "auto":
        progress = "bar" if out.isatty() else "lines"
    view: LineProgress | BarProgress | None = None
    if progress == "bar":
        view = BarProgress(scheduler.job)
    elif progress == "lines":
        view = LineProgress(scheduler.job, out)
    if view is not None:
        scheduler.on_event = view
    try:
        with sdk.StopSignals() as stop:
            summary = await run_job(
                spec,
                master,
                role=role,
                connect_timeout=connect_timeout,
                scheduler=scheduler,
                stop=stop,
                keep_running=keep_running,
                give_up_after=give_up_after,
                tick=view.tick if view is not None else None,
            )
    finally:
        if view is not None:
            view.close()
    print(summary_text(summary), file=out, flush=True)
    if json_out is not None:
        Path(json_out).write_text(json.dumps(summary, indent=2) + "\n")
    return 0 if summary["succeeded"] == summary["tasks"] else 1
