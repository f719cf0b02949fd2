"""Running a gang training against a master: subscribe, train (restarting the gang as
needed), read the result, tear down quietly."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from corral.frameworks import sdk
from corral.frameworks.gang import checkpoint
from corral.frameworks.gang.scheduler import Event, GangScheduler
from corral.frameworks.gang.spec import TrainSpec


async def run_training(
    spec: TrainSpec,
    master: str = sdk.DEFAULT_MASTER,
    *,
    role: str = "*",
    connect_timeout: float = 10,
    on_event: Callable[[Event], None] | None = None,
    scheduler: GangScheduler | None = None,
) -> dict[str, Any]:
    """Train until the gang succeeds or runs out of restarts; the summary
    (``GangScheduler.summary`` plus ``final_loss`` and ``resumed_from_step`` from rank 0's
    result file, None when there is none, e.g. for a custom ``command``)."""
    gang = scheduler or GangScheduler(spec, on_event or (lambda e: None))
    directory = Path(spec.checkpoint_dir)
    # A result left by an earlier run in this directory must not pass for this run's.
    (directory / checkpoint.RESULT).unlink(missing_ok=True)
    # Agents with GPUs are offered only to frameworks that say they use GPUs. (By the enum's
    # name: a framework imports the SDK, not the wire modules.)
    gpus = sdk.FrameworkCapability.FRAMEWORK_CAPABILITY_GPU_RESOURCES
    capabilities = [gpus] if spec.gpus > 0 else []
    info = sdk.FrameworkInfo(name=f"gang:{spec.name}", role=role, capabilities=capabilities)
    async with sdk.Driver(gang, info, master, connect_timeout=connect_timeout) as driver:
        waiting = asyncio.ensure_future(driver.wait())
        finished = asyncio.ensure_future(gang.finished.wait())
        try:
            await asyncio.wait({waiting, finished}, return_when=asyncio.FIRST_COMPLETED)
            if waiting.done():
                waiting.result()  # the driver ended first: raise why
            else:
                await driver.teardown()  # from outside the callbacks: quiet
                await waiting
        finally:
            for t in (waiting, finished):
                t.cancel()
    summary = gang.summary()
    result = checkpoint.read_json(directory / checkpoint.RESULT) if summary["succeeded"] else None
    summary["final_loss"] = None if result is None else result.get("final_loss")
    summary["resumed_from_step"] = None if result is None else result.get("resumed_from_step")
    return summary


def summary_text(s: dict[str, Any]) -> str:
    restarts = f"{s['restarts']} restart{'s' if s['restarts'] != 1 else ''}"
    loss = "no result file" if s["final_loss"] is None else f"final loss {s['final_loss']:.6g}"
    if s["resumed_from_step"]:
        loss += f" (resumed from step {s['resumed_from_step']})"
    outcome = "trained" if s["succeeded"] else "FAILED"
    return (
        f"gang {s['job']}: {outcome}; {s['workers']} workers, {s['steps']} steps, {restarts}, "
        f"{loss}; {s['seconds']:.1f} s (checkpoints in {s['checkpoint_dir']})"
    )


async def main(
    spec: TrainSpec,
    master: str = sdk.DEFAULT_MASTER,
    role: str = "*",
    connect_timeout: float = 10,
    *,
    json_out: str | Path | None = None,
    out: TextIO = sys.stdout,
) -> int:
    """``corral run gang``: train with a line per event, print the final loss and the summary;
    0 if training completed, 1 if the gang ran out of restarts."""
    started = time.monotonic()

    def show(e: Event) -> None:
        print(f"[{time.monotonic() - started:7.1f}s] {e.kind}: {e.detail}", file=out, flush=True)

    summary = await run_training(
        spec, master, role=role, connect_timeout=connect_timeout, on_event=show
    )
    if summary["final_loss"] is not None:
        print(f"final loss {summary['final_loss']:.6g}", file=out)
    print(summary_text(summary), file=out)
    if json_out is not None:
        Path(json_out).write_text(json.dumps(summary, indent=2) + "\n")
    return 0 if summary["succeeded"] else 1
