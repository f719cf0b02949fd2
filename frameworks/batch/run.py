"""Running a batch job against a master: subscribe, run every task, tear down quietly."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from corral.frameworks import sdk
from corral.frameworks.batch.job import JobSpec
from corral.frameworks.batch.progress import BarProgress, LineProgress, summary_text
from corral.frameworks.batch.scheduler import BatchScheduler, Event


async def run_job(
    spec: JobSpec,
    master: str = sdk.DEFAULT_MASTER,
    *,
    role: str = "*",
    connect_timeout: float = 10,
    on_event: Callable[[Event], None] | None = None,
    scheduler: BatchScheduler | None = None,
) -> dict[str, Any]:
    """Run ``spec`` until every task has ended for good; the summary (``BatchScheduler.summary``).

    The framework is torn down at the end (nothing of it stays on the master), from outside the
    status callback, once its last demand update has returned."""
    batch = scheduler or BatchScheduler(spec, on_event or (lambda e: None))
    info = sdk.FrameworkInfo(name=f"batch:{spec.name}", role=role)
    if spec.revocable:
        info.capabilities.append(sdk.FrameworkCapability.FRAMEWORK_CAPABILITY_REVOCABLE_RESOURCES)
    async with sdk.Driver(batch, info, master, connect_timeout=connect_timeout) as driver:
        waiting = asyncio.ensure_future(driver.wait())
        finished = asyncio.ensure_future(batch.finished.wait())
        try:
            await asyncio.wait({waiting, finished}, return_when=asyncio.FIRST_COMPLETED)
            if waiting.done():
                waiting.result()  # the driver ended first: raise why
            else:
                await batch.settle()
                await driver.teardown()
                await waiting
        finally:
            for t in (waiting, finished):
                t.cancel()
    return batch.summary()


async def main(
    spec: JobSpec,
    master: str = sdk.DEFAULT_MASTER,
    role: str = "*",
    connect_timeout: float = 10,
    *,
    progress: str = "auto",
    json_out: str | Path | None = None,
    out: TextIO = sys.stdout,
) -> int:
    """``corral run batch``: run the job with progress, print the summary; 0 if every task
    succeeded, 1 otherwise."""
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
        summary = await run_job(
            spec, master, role=role, connect_timeout=connect_timeout, scheduler=scheduler
        )
    finally:
        if view is not None:
            view.close()
    print(summary_text(summary), file=out)
    if json_out is not None:
        Path(json_out).write_text(json.dumps(summary, indent=2) + "\n")
    return 0 if summary["succeeded"] == summary["tasks"] else 1
