"""Running a batch job against a master: subscribe, run every task, tear down quietly.

The run ends one of four ways, each with its summary: every task ended (torn down); the master
refused the job's demand for good (torn down, the refusal raised); SIGINT or SIGTERM (torn down,
its live tasks killed, or with ``keep_running`` left to the master to fail over); tasks waited
``give_up_after`` seconds with none launched or ended (torn down). While tasks wait on the
master, the master's reason is asked every ``check_every`` seconds (``sdk.why_pending``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from corral.frameworks import sdk
from corral.frameworks.batch.job import JobSpec
from corral.frameworks.batch.progress import BarProgress, LineProgress, summary_text
from corral.frameworks.batch.scheduler import BatchScheduler, Event

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
) -> dict[str, Any]:
    """Run ``spec`` until every task has ended for good, ``stop`` fires or the job gives up;
    the summary (``BatchScheduler.summary`` plus how it ended: ``stopped_by``, ``gave_up``,
    ``killed``, ``left_running``, ``framework_id``). A demand the master refuses for good
    raises its ``CallError`` after tearing down.

    The framework is torn down at the end (nothing of it stays on the master), from outside the
    status callback, once its last demand update has returned; with ``keep_running`` a stop
    leaves it (and its tasks) to the master for its failover timeout instead."""
    batch = scheduler or BatchScheduler(spec, on_event or (lambda e: None))
    info = sdk.FrameworkInfo(name=f"batch:{spec.name}", role=role)
    ending: dict[str, Any] = {"stopped_by": None, "gave_up": None, "killed": 0, "left_running": 0}
    driver = sdk.Driver(batch, info, master, connect_timeout=connect_timeout)
    async with contextlib.AsyncExitStack() as stack:
        entering = stack.enter_async_context(driver)
        if stop is None:
            await entering
        elif await stop.unless_stopped(entering) is None:
            ending["stopped_by"] = stop.received  # before it subscribed: nothing to end
            return {**batch.summary(), **ending}
        ending["framework_id"] = driver.framework_id
        waiting = asyncio.ensure_future(driver.wait())
        finished = asyncio.ensure_future(batch.finished.wait())
        stopping: asyncio.Future[Any] = asyncio.ensure_future(
            stop.wait() if stop is not None else asyncio.get_running_loop().create_future()
        )
        asked_at = -math.inf
        try:
            while True:
                # A second's tick: cheap (no call), and bounds how late a give-up comes.
                await asyncio.wait(
                    {waiting, finished, stopping}, timeout=1.0, return_when=asyncio.FIRST_COMPLETED
                )
                if waiting.done():
                    waiting.result()  # the driver ended first: raise why
                    break
                if finished.done():
                    await batch.settle()
                    await _end(driver, batch, ending, teardown=True)
                    if batch.failure is not None:
                        raise batch.failure
                    break
                if stopping.done():
                    ending["stopped_by"] = stopping.result()
                    batch.on_event(Event("stopping", detail=_leaving(batch, keep_running)))
                    await _end(driver, batch, ending, teardown=not keep_running)
                    break
                stalled = batch.stalled_for()
                due = stalled >= check_every and batch.clock() - asked_at >= check_every
                giving_up = give_up_after is not None and stalled >= give_up_after
                if due or giving_up:
                    asked_at = batch.clock()
                    why = await _why_waiting(driver)
                    batch.on_event(Event("waiting", detail=why))
                    if giving_up:
                        ending["gave_up"] = (
                            f"no task launched or ended in {give_up_after:g} s; {why}"
                        )
                        await _end(driver, batch, ending, teardown=True)
                        break
        finally:
            for t in (waiting, finished, stopping):
                t.cancel()
    return {**batch.summary(), **ending}


async def _why_waiting(driver: sdk.Driver) -> str:
    """The master's why-pending for each unmet demand, as one line."""
    try:
        # The master of the driver's connection: with several (HA), the leader it follows.
        pending = await sdk.why_pending(driver.address or driver.master, driver.framework_id)
    except sdk.CallError as err:  # the master is away: say so, and ask again next time
        return f"the master did not say why ({err.code.name}: {err.message})"
    if not pending:
        return "no demand is pending at the master"
    return "; ".join(f"{p.name}: {p.unmet} of {p.count} unplaced: {p.summary}" for p in pending)


def _leaving(batch: BatchScheduler, keep_running: bool) -> str:
    live = len(batch.job.live)
    if keep_running:
        return f"leaving the framework and its {live} running tasks to fail over"
    return f"tearing the framework down: its {live} running tasks are killed"


async def _end(
    driver: sdk.Driver, batch: BatchScheduler, ending: dict[str, Any], *, teardown: bool
) -> None:
    """Tear the framework down (its live tasks are killed) or, when not ``teardown``, stop the
    driver and leave the framework to the master's failover timeout."""
    live = len(batch.job.live)
    if teardown:
        try:
            await driver.teardown()
            ending["killed"] = live
            return
        except sdk.CallError as err:  # not connected: the master's failover timeout will do
            ending["teardown_failed"] = f"{err.code.name}: {err.message}"
    await driver.stop()
    ending["left_running"] = live


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
            )
    finally:
        if view is not None:
            view.close()
    print(summary_text(summary), file=out, flush=True)
    if json_out is not None:
        Path(json_out).write_text(json.dumps(summary, indent=2) + "\n")
    return 0 if summary["succeeded"] == summary["tasks"] else 1
