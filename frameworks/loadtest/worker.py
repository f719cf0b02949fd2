"""A load-test worker process: M load frameworks in one asyncio loop, reporting JSON lines.

    python -m corral.frameworks.loadtest.worker --master HOST:PORT --frameworks M --mode launch

Every ``--report-interval`` seconds it prints ``{"kind": "tick", ...}`` with the counters of
that interval (so the reader sums what falls in its window). SIGUSR1 starts the drain: no more
launches; wait for the tasks in flight to end while they keep ending (until none has ended for
``--drain-timeout`` seconds, or ``--drain-limit`` in all: an overloaded cluster can have a
backlog of minutes, and a task that is slow to end is not lost), print
``{"kind": "final", "unterminated": N}``, tear the frameworks down and exit. SIGTERM skips the
wait. Nothing but JSON goes to stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
import time
from typing import Any

from corral.frameworks import sdk
from corral.frameworks.loadtest.scheduler import Counters, LoadScheduler, Mode, TaskShape


def _emit(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def _tick(c: Counters, schedulers: list[LoadScheduler]) -> dict[str, Any]:
    return {
        "kind": "tick",
        "t": time.time(),
        "offers": c.offers,
        "offer_events": c.offer_events,
        "declined": c.declined,
        "accepts": c.accepts,
        "launched": c.launched,
        "running": c.running,
        "finished": c.finished,
        "lost": c.lost,
        "revived": c.revived,
        "lost_states": c.lost_states,
        "call_errors": c.call_errors,
        "errors": c.errors,
        "accept_to_running": c.accept_to_running.to_json(),
        "pending": sum(len(s.pending) for s in schedulers),
    }


async def run(args: argparse.Namespace) -> int:
    counters = Counters()
    shape = TaskShape(cpus=args.task_cpus, mem=args.task_mem, seconds=args.task_seconds)
    mode = Mode(args.mode)
    schedulers = [
        LoadScheduler(f"{args.name}-{i}", mode, shape, lambda: counters)
        for i in range(args.frameworks)
    ]
    loop = asyncio.get_running_loop()
    drain = asyncio.Event()
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGUSR1, drain.set)
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)

    async with contextlib.AsyncExitStack() as stack:
        drivers: list[sdk.Driver] = []

        async def connect(i: int, s: LoadScheduler) -> None:
            info = sdk.FrameworkInfo(name=s.name, role="*", failover_timeout=args.failover_timeout)
            d = sdk.Driver(s, info, args.master, connect_timeout=120, seed=args.seed + i)
            drivers.append(await stack.enter_async_context(d))

        await asyncio.gather(*(connect(i, s) for i, s in enumerate(schedulers)))
        # In the schedulers' order, which the drain pairs them by (names sort "x-10" < "x-2").
        order = {s.name: i for i, s in enumerate(schedulers)}
        drivers.sort(key=lambda d: order[d.scheduler.name])  # type: ignore[attr-defined]
        _emit({"kind": "ready", "t": time.time(), "frameworks": len(drivers)})

        async def report() -> None:
            nonlocal counters
            while True:
                await asyncio.sleep(args.report_interval)
                c, counters = counters, Counters()
                _emit(_tick(c, schedulers))

        reporter = loop.create_task(report())
        failed = loop.create_task(_first_failure(drivers))
        stopping = loop.create_task(stop.wait())
        draining = loop.create_task(drain.wait())
        await asyncio.wait({draining, stopping, failed}, return_when=asyncio.FIRST_COMPLETED)
        if failed.done() and failed.exception() is not None:
            _emit({"kind": "failed", "error": repr(failed.exception())})
        if not stop.is_set():
            await asyncio.gather(*(s.drain(d) for s, d in zip(schedulers, drivers, strict=True)))
            await asyncio.gather(*(s.settle() for s in schedulers))
            drained = loop.create_task(_all_drained(schedulers))
            await _drain(schedulers, {drained, stopping}, args.drain_timeout, args.drain_limit)
            drained.cancel()
        reporter.cancel()
        failed.cancel()
        stopping.cancel()
        draining.cancel()
        _emit(_tick(counters, schedulers))
        _emit(
            {
                "kind": "final",
                "t": time.time(),
                "unterminated": sum(len(s.pending) for s in schedulers),
            }
        )
        with contextlib.suppress(Exception):
            async with asyncio.timeout(10):
                await asyncio.gather(*(d.teardown() for d in drivers), return_exceptions=True)
    return 0


async def _drain(
    schedulers: list[LoadScheduler],
    ends: set[asyncio.Task[Any]],
    quiet: float,
    limit: float,
) -> None:
    """Until one of ``ends`` is done, no task has ended for ``quiet`` s, or ``limit`` s."""
    loop = asyncio.get_running_loop()
    start = progress_at = loop.time()
    left = sum(len(s.pending) for s in schedulers)
    while True:
        now = loop.time()
        wait = min(progress_at + quiet, start + limit) - now
        if wait <= 0:
            return
        done, _ = await asyncio.wait(ends, timeout=min(wait, 1.0), return_when="FIRST_COMPLETED")
        if done:
            return
        still = sum(len(s.pending) for s in schedulers)
        if still < left:
            left, progress_at = still, loop.time()


async def _all_drained(schedulers: list[LoadScheduler]) -> None:
    await asyncio.gather(*(s.drained.wait() for s in schedulers))


async def _first_failure(drivers: list[sdk.Driver]) -> None:
    """Returns (raising) when a driver ends on its own: the master ended a framework."""
    waits = [asyncio.get_running_loop().create_task(d.wait()) for d in drivers]
    try:
        done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        for t in done:
            t.result()
    finally:
        for w in waits:
            w.cancel()


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="corral.frameworks.loadtest.worker")
    p.add_argument("--master", required=True)
    p.add_argument("--frameworks", type=int, default=1)
    p.add_argument("--mode", choices=[m.value for m in Mode], default="launch")
    p.add_argument("--task-seconds", type=float, default=1.0)
    p.add_argument("--task-cpus", type=float, default=1.0)
    p.add_argument("--task-mem", type=float, default=128.0)
    p.add_argument("--name", default="load")
    p.add_argument("--seed", type=int, default=0)
    # Short by default (a finished run's frameworks go at once); a run that kills the leader
    # gives them the failover's length to come back.
    p.add_argument("--failover-timeout", type=float, default=1.0)
    p.add_argument("--report-interval", type=float, default=0.5)
    p.add_argument("--drain-timeout", type=float, default=30.0, help="seconds without progress")
    p.add_argument("--drain-limit", type=float, default=600.0, help="seconds in all")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    return asyncio.run(run(parse(argv)))


if __name__ == "__main__":
    sys.exit(main())
