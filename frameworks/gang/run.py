"""Running a gang training against a master: subscribe, train (restarting the gang as
needed), read the result, tear down quietly.

As ``corral run batch``: while the gang waits to be placed, the master's reason is asked every
``check_every`` seconds; ``give_up_after`` ends a gang that waited that long; SIGINT or
SIGTERM tears the framework down (its workers killed), or with ``keep_running`` leaves it to
the master to fail over; a demand the master refuses for good ends the run with its reason.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from corral.frameworks import sdk
from corral.frameworks.framework_info import framework_info
from corral.frameworks.gang import checkpoint
from corral.frameworks.gang.scheduler import Event, GangScheduler
from corral.frameworks.gang.spec import TrainSpec
from corral.frameworks.job_loop import JobTerms, ending_text, run_to_end

CHECK_SECONDS = 5.0  # how often the master is asked why the gang waits, while it does
LINE_EVERY = 10.0  # the longest silence while the gang trains: a line of where it is


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
    tick: Callable[[], None] | None = None,
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
    info = framework_info(
        f"gang:{spec.name}",
        role,
        gpus=spec.gpus > 0,
        tolerations=spec.tolerations,
        constraints=spec.constraints,
    )
    terms = JobTerms(
        noun="workers",
        live=lambda: len(gang.run.live),
        note=lambda kind, detail: gang.on_event(Event(kind, detail)),
        gave_up=lambda after, why: f"the gang waited {after:g} s unplaced; {why}",
        tick=tick,
    )
    ending = await run_to_end(
        sdk.Driver(gang, info, master, connect_timeout=connect_timeout),
        gang,
        terms,
        stop=stop,
        keep_running=keep_running,
        give_up_after=give_up_after,
        check_every=check_every,
    )
    return _with_result({**gang.summary(), **ending}, directory)


def _with_result(summary: dict[str, Any], directory: Path) -> dict[str, Any]:
    result = checkpoint.read_json(directory / checkpoint.RESULT) if summary["succeeded"] else None
    summary["final_loss"] = None if result is None else result.get("final_loss")
    summary["resumed_from_step"] = None if result is None else result.get("resumed_from_step")
    return summary


def training_line(gang: GangScheduler, directory: Path) -> str:
    """Where the training is: its attempt, its running workers, its last checkpoint."""
    run = gang.run
    text = f"attempt {run.attempt}, {len(run.live)} of {run.workers} workers running"
    try:
        saved = checkpoint.load(directory)
    except (OSError, ValueError, KeyError, TypeError):  # being written, or not a checkpoint
        saved = None
    if saved is not None:
        step, _weights, loss = saved
        text += f", last checkpoint at step {step} (loss {loss:.6g})"
    return text


def summary_text(s: dict[str, Any]) -> str:
    restarts = f"{s['restarts']} restart{'s' if s['restarts'] != 1 else ''}"
    if s.get("disruptions"):
        restarts += f" (and {s['disruptions']} relaunch(es) after a preemption, eviction or drain)"
    loss = "no result file" if s["final_loss"] is None else f"final loss {s['final_loss']:.6g}"
    if s["resumed_from_step"]:
        loss += f" (resumed from step {s['resumed_from_step']})"
    outcome = "trained" if s["succeeded"] else "FAILED"
    return (
        f"gang {s['job']}: {outcome}; {s['workers']} workers, {s['steps']} steps, {restarts}, "
        f"{loss}; {s['seconds']:.1f} s (checkpoints in {s['checkpoint_dir']})"
        + ending_text(s, "workers")
    )


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
    last_line = started

    def say(text: str) -> None:
        nonlocal last_line
        last_line = time.monotonic()
        print(f"[{last_line - started:7.1f}s] {text}", file=out, flush=True)

    def show(e: Event) -> None:
        say(f"{e.kind}: {e.detail}")

    gang = GangScheduler(spec, show)

    def tick() -> None:  # every second of the run: never silent for long while it trains
        if time.monotonic() - last_line >= LINE_EVERY:
            say(f"{gang.run.phase.value}: {training_line(gang, Path(spec.checkpoint_dir))}")

    with sdk.StopSignals() as stop:
        summary = await run_training(
            spec,
            master,
            role=role,
            connect_timeout=connect_timeout,
            scheduler=gang,
            stop=stop,
            keep_running=keep_running,
            give_up_after=give_up_after,
            tick=tick,
        )
    if summary["final_loss"] is not None:
        print(f"final loss {summary['final_loss']:.6g}", file=out)
    print(summary_text(summary), file=out, flush=True)
    if json_out is not None:
        Path(json_out).write_text(json.dumps(summary, indent=2) + "\n")
    return 0 if summary["succeeded"] else 1
