"""Running a gang training against a master: subscribe, train (restarting the gang as
needed), read the result, tear down quietly.

As ``corral run batch``: while the gang waits to be placed, the master's reason is asked every
``check_every`` seconds; ``give_up_after`` ends a gang that waited that long; SIGINT or
SIGTERM tears the framework down (its workers killed), or with ``keep_running`` leaves it to
the master to fail over; a demand the master refuses for good ends the run with its reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from corral.frameworks import sdk
from corral.frameworks.gang import checkpoint
from corral.frameworks.gang.scheduler import Event, GangScheduler
from corral.frameworks.gang.spec import TrainSpec

CHECK_SECONDS = 5.0  # how often the master is asked why the gang waits, while it does


async def run_training(
    spec: TrainSpec,
    master: str = sdk.DEFAULT_MASTER,
    *,
    role: str = "*",
    connect_timeout: float = 10,
    on_event: Callable[[Event], None] | None = None,
    scheduler: GangScheduler | None = None,
    stop: sdk.StopSignals | None = None,
    keep_running: bool = False,
    give_up_after: float | None = None,
    check_every: float = CHECK_SECONDS,
) -> dict[str, Any]:
    """Train until the gang succeeds, runs out of restarts, ``stop`` fires or it waited
    ``give_up_after`` seconds to be placed; the summary (``GangScheduler.summary`` plus
    ``final_loss`` and ``resumed_from_step`` from rank 0's result file, None when there is
    none, e.g. for a custom ``command``, and how it ended: ``stopped_by``, ``gave_up``,
    ``killed``, ``left_running``, ``framework_id``). A demand the master refuses for good
    raises its ``CallError`` after tearing down."""
    gang = scheduler or GangScheduler(spec, on_event or (lambda e: None))
    directory = Path(spec.checkpoint_dir)
    # A result left by an earlier run in this directory must not pass for this run's.
    (directory / checkpoint.RESULT).unlink(missing_ok=True)
    # Agents with GPUs are offered only to frameworks that say they use GPUs. (By the enum's
    # name: a framework imports the SDK, not the wire modules.)
    gpus = sdk.FrameworkCapability.FRAMEWORK_CAPABILITY_GPU_RESOURCES
    capabilities = [gpus] if spec.gpus > 0 else []
    info = sdk.FrameworkInfo(name=f"gang:{spec.name}", role=role, capabilities=capabilities)
    ending: dict[str, Any] = {"stopped_by": None, "gave_up": None, "killed": 0, "left_running": 0}
    driver = sdk.Driver(gang, info, master, connect_timeout=connect_timeout)
    async with contextlib.AsyncExitStack() as stack:
        entering = stack.enter_async_context(driver)
        if stop is None:
            await entering
        elif await stop.unless_stopped(entering) is None:
            ending["stopped_by"] = stop.received  # before it subscribed: nothing to end
            return _with_result({**gang.summary(), **ending}, directory)
        ending["framework_id"] = driver.framework_id
        waiting = asyncio.ensure_future(driver.wait())
        finished = asyncio.ensure_future(gang.finished.wait())
        stopping: asyncio.Future[Any] = asyncio.ensure_future(
            stop.wait() if stop is not None else asyncio.get_running_loop().create_future()
        )
        asked_at = -math.inf
        try:
            while True:
                await asyncio.wait(
                    {waiting, finished, stopping}, timeout=1.0, return_when=asyncio.FIRST_COMPLETED
                )
                if waiting.done():
                    waiting.result()  # the driver ended first: raise why
                    break
                if finished.done():
                    await _end(driver, gang, ending, teardown=True)  # outside callbacks: quiet
                    if gang.failure is not None:
                        raise gang.failure
                    break
                if stopping.done():
                    ending["stopped_by"] = stopping.result()
                    gang.on_event(Event("stopping", _leaving(gang, keep_running)))
                    await _end(driver, gang, ending, teardown=not keep_running)
                    break
                stalled = gang.stalled_for()
                due = stalled >= check_every and gang.clock() - asked_at >= check_every
                giving_up = give_up_after is not None and stalled >= give_up_after
                if due or giving_up:
                    asked_at = gang.clock()
                    why = await _why_waiting(driver)
                    gang.on_event(Event("waiting", why))
                    if giving_up:
                        ending["gave_up"] = f"the gang waited {give_up_after:g} s unplaced; {why}"
                        await _end(driver, gang, ending, teardown=True)
                        break
        finally:
            for t in (waiting, finished, stopping):
                t.cancel()
    return _with_result({**gang.summary(), **ending}, directory)


def _with_result(summary: dict[str, Any], directory: Path) -> dict[str, Any]:
    result = checkpoint.read_json(directory / checkpoint.RESULT) if summary["succeeded"] else None
    summary["final_loss"] = None if result is None else result.get("final_loss")
    summary["resumed_from_step"] = None if result is None else result.get("resumed_from_step")
    return summary


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


def _leaving(gang: GangScheduler, keep_running: bool) -> str:
    live = len(gang.run.live)
    if keep_running:
        return f"leaving the framework and its {live} running workers to fail over"
    return f"tearing the framework down: its {live} running workers are killed"


async def _end(
    driver: sdk.Driver, gang: GangScheduler, ending: dict[str, Any], *, teardown: bool
) -> None:
    """Tear the framework down (its live workers are killed) or, when not ``teardown``, stop
    the driver and leave the framework to the master's failover timeout."""
    live = len(gang.run.live)
    if teardown:
        try:
            await driver.teardown()
            ending["killed"] = live
            return
        except sdk.CallError as err:  # not connected: the master's failover timeout will do
            ending["teardown_failed"] = f"{err.code.name}: {err.message}"
    await driver.stop()
    ending["left_running"] = live


def summary_text(s: dict[str, Any]) -> str:
    restarts = f"{s['restarts']} restart{'s' if s['restarts'] != 1 else ''}"
    loss = "no result file" if s["final_loss"] is None else f"final loss {s['final_loss']:.6g}"
    if s["resumed_from_step"]:
        loss += f" (resumed from step {s['resumed_from_step']})"
    outcome = "trained" if s["succeeded"] else "FAILED"
    return (
        f"gang {s['job']}: {outcome}; {s['workers']} workers, {s['steps']} steps, {restarts}, "
        f"{loss}; {s['seconds']:.1f} s (checkpoints in {s['checkpoint_dir']})" + _ending(s)
    )


def _ending(s: dict[str, Any]) -> str:
    """How a run that did not train to its end ended, and what became of its workers."""
    if s.get("gave_up"):
        why = f"; gave up: {s['gave_up']}"
    elif s.get("stopped_by"):
        why = f"; stopped by {s['stopped_by']}"
    else:
        return ""
    if s.get("left_running"):
        left = f"{s['left_running']} running workers left to fail over"
        if s.get("framework_id"):
            left += f" with framework {s['framework_id']}"
        if s.get("teardown_failed"):
            left += f" (tearing down failed: {s['teardown_failed']})"
        return f"{why}; {left}"
    if s.get("framework_id"):
        return f"{why}; framework torn down, {s.get('killed', 0)} running workers killed"
    return f"{why} before it subscribed"


async def main(
    spec: TrainSpec,
    master: str = sdk.DEFAULT_MASTER,
    role: str = "*",
    connect_timeout: float = 10,
    *,
    json_out: str | Path | None = None,
    keep_running: bool = False,
    give_up_after: float | None = None,
    out: TextIO = sys.stdout,
) -> int:
    """``corral run gang``: train with a line per event (and the master's reason while the
    gang waits), print the final loss and the summary; 0 if training completed, 1 if the gang
    ran out of restarts, gave up waiting or was stopped by SIGINT/SIGTERM."""
    started = time.monotonic()

    def show(e: Event) -> None:
        print(f"[{time.monotonic() - started:7.1f}s] {e.kind}: {e.detail}", file=out, flush=True)

    with sdk.StopSignals() as stop:
        summary = await run_training(
            spec,
            master,
            role=role,
            connect_timeout=connect_timeout,
            on_event=show,
            stop=stop,
            keep_running=keep_running,
            give_up_after=give_up_after,
        )
    if summary["final_loss"] is not None:
        print(f"final loss {summary['final_loss']:.6g}", file=out)
    print(summary_text(summary), file=out, flush=True)
    if json_out is not None:
        Path(json_out).write_text(json.dumps(summary, indent=2) + "\n")
    return 0 if summary["succeeded"] else 1
