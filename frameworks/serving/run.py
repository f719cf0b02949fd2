"""Running an app against a master until told to stop: subscribe, keep the instances, follow
the app file, then kill the instances and tear down quietly (or leave them running)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from corral.frameworks import sdk
from corral.frameworks.serving.app import AppError, AppSpec
from corral.frameworks.serving.instances import Counts
from corral.frameworks.serving.scheduler import ServingScheduler, status_line

TICK_SECONDS = 0.5


class FileWatch:
    """Has the file changed since last asked (mtime or size)? A poll, so it works on every
    filesystem and with editors that replace the file."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._seen = self._stamp()

    def _stamp(self) -> tuple[int, int] | None:
        try:
            st = self.path.stat()
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size)

    def changed(self) -> bool:
        stamp = self._stamp()
        if stamp is None or stamp == self._seen:
            return False
        self._seen = stamp
        return True


async def run_app(
    spec: AppSpec,
    master: str = sdk.DEFAULT_MASTER,
    *,
    role: str | None = None,
    connect_timeout: float = 10,
    duration: float | None = None,
    config: str | Path | None = None,
    stop: asyncio.Event | None = None,
    reload: asyncio.Event | None = None,
    on_event: Callable[[str], None] | None = None,
    on_status: Callable[[Counts], None] | None = None,
    scheduler: ServingScheduler | None = None,
    teardown: bool = True,
) -> dict[str, object]:
    """Keep ``spec`` running until ``stop`` is set or ``duration`` seconds pass; the summary
    (``ServingScheduler.summary``, as it was just before stopping). A demand the master
    refuses for good (an ungranted priority class) tears the framework down and raises its
    ``CallError``.

    ``config``: the app file to follow (a change in it, or ``reload`` set, applies it: scale,
    rolling restart). ``teardown``: kill the instances and end the framework at the end
    (otherwise the driver stops and the master keeps the instances for the failover timeout).
    """
    serving = scheduler or ServingScheduler(spec, on_event or (lambda text: None))
    stop = stop or asyncio.Event()
    reload = reload or asyncio.Event()
    watch = FileWatch(config) if config is not None else None
    info = spec.framework_info(role)
    loop = asyncio.get_running_loop()
    deadline = None if duration is None else loop.time() + duration
    async with sdk.Driver(serving, info, master, connect_timeout=connect_timeout) as driver:
        waiting = asyncio.ensure_future(driver.wait())
        stopping = asyncio.ensure_future(stop.wait())
        try:
            while True:
                timeout = TICK_SECONDS
                if deadline is not None:
                    timeout = max(0.0, min(timeout, deadline - loop.time()))
                await asyncio.wait({waiting, stopping}, timeout=timeout)
                if waiting.done():
                    waiting.result()  # the driver ended on its own: raise why
                    break
                if stop.is_set() or (deadline is not None and loop.time() >= deadline):
                    break
                if serving.refusal is not None:
                    break  # the master will refuse the app's demand again: end with why
                if reload.is_set() or (watch is not None and watch.changed()):
                    reload.clear()
                    _apply(serving, config, on_event or serving.on_event)
                await serving.tick(driver)
                if on_status is not None:
                    on_status(serving.counts())
            summary = serving.summary()
            await serving.close()
            if not waiting.done():
                refused = serving.refusal is not None
                await (driver.teardown() if teardown or refused else driver.stop())
                await waiting
        finally:
            for t in (waiting, stopping):
                t.cancel()
            await serving.close()
    if serving.refusal is not None:
        raise serving.refusal  # `corral run serving`: exit 1 with the master's reason
    return summary


def _apply(
    serving: ServingScheduler, config: str | Path | None, say: Callable[[str], None]
) -> None:
    if config is None:
        return
    try:
        what = serving.update(AppSpec.load(config))
    except AppError as err:
        say(f"{config} not applied: {err}")
        return
    say(f"{config} applied: {what}")


class Lines:
    """Timestamped lines for the user: events as they happen, the status line when it
    changes (and every ``every`` seconds while it does not)."""

    def __init__(
        self,
        spec: AppSpec,
        out: TextIO = sys.stdout,
        every: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.spec, self.out, self.every, self.clock = spec, out, every, clock
        self.start = clock()
        self.last_status = ""
        self.last_at = self.start

    def event(self, text: str) -> None:
        self._print(text)

    def status(self, counts: Counts) -> None:
        line = status_line(self.spec, counts)
        if line != self.last_status or self.clock() - self.last_at >= self.every:
            self.last_status = line
            self.last_at = self.clock()
            self._print(line)

    def _print(self, text: str) -> None:
        print(f"[{self.clock() - self.start:7.1f}s] {text}", file=self.out, flush=True)


async def main(
    spec: AppSpec,
    master: str = sdk.DEFAULT_MASTER,
    role: str | None = None,
    connect_timeout: float = 10,
    *,
    config: str | Path | None = None,
    duration: float | None = None,
    teardown: bool = True,
    out: TextIO = sys.stdout,
) -> int:
    """``corral run serving``: run until SIGINT/SIGTERM or ``duration``; SIGHUP re-reads the
    app file. Prints events and status lines, then the summary; exit 0."""
    lines = Lines(spec, out)
    serving = ServingScheduler(spec, lines.event)
    stop, reload = asyncio.Event(), asyncio.Event()
    loop = asyncio.get_running_loop()
    handled = []
    for sig, event in ((signal.SIGINT, stop), (signal.SIGTERM, stop), (signal.SIGHUP, reload)):
        with contextlib.suppress(NotImplementedError, RuntimeError):  # not the main thread
            loop.add_signal_handler(sig, event.set)
            handled.append(sig)

    def status(counts: Counts) -> None:
        lines.spec = serving.spec  # the status names what runs now
        lines.status(counts)

    try:
        summary = await run_app(
            spec,
            master,
            role=role,
            connect_timeout=connect_timeout,
            duration=duration,
            config=config,
            stop=stop,
            reload=reload,
            on_status=status,
            scheduler=serving,
            teardown=teardown,
        )
    finally:
        for sig in handled:
            loop.remove_signal_handler(sig)
    print(
        f"app {summary['app']}: {summary['running']} of {summary['wanted']} running "
        f"({summary['healthy']} healthy) at the end; {summary['launched']} launched, "
        f"{summary['failures']} failed or unhealthy ({summary['unhealthy_kills']} unhealthy)",
        file=out,
        flush=True,
    )
    return 0
