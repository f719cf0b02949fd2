"""What the user sees while a job runs: a rich progress bar on a terminal, log lines otherwise,
and a summary at the end."""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from corral.frameworks.batch.job import Job
from corral.frameworks.batch.scheduler import Event
from corral.frameworks.job_loop import ending_text

# ``--progress lines``: the longest silence while the job runs, and the shortest gap between
# two status lines (a job of thousands of tasks changes many times a second).
LINE_EVERY = 10.0
LINE_MIN_GAP = 1.0


class LineProgress:
    """Log lines, for logs and pipes: the job's status line whenever it changes (tasks waiting,
    running, ended, retried; at most one a ``min_gap`` seconds: a change held back is said by
    the next line), and again at least every ``every`` seconds while nothing changes (``tick``,
    which the run loop calls every second), so a job whose few tasks run long is never silent
    (issue #40: 34 s without a line). Besides: a line per task given up, per stage, per word of
    the master's while tasks wait, and on stopping."""

    def __init__(
        self,
        job: Job,
        out: TextIO = sys.stdout,
        every: float = LINE_EVERY,
        clock: Callable[[], float] = time.monotonic,
        min_gap: float = LINE_MIN_GAP,
    ) -> None:
        self.job, self.out, self.every, self.clock = job, out, every, clock
        self.min_gap = min_gap
        self.start = clock()
        self.last_line = -math.inf  # the first status line is said at once
        self.said = ""  # the last status line printed

    def __call__(self, event: Event) -> None:
        if event.kind == "gave up":
            self._print(f"task {event.task_id} gave up after retries: {event.detail}")
        elif event.kind == "stage":
            self._print(f"stage {event.detail} started")
        elif event.kind == "waiting":
            self._print(f"{status_line(self.job)}; waiting on the master: {event.detail}")
            return
        elif event.kind == "stopping":
            self._print(f"stopping: {event.detail}")
            return
        self.tick()

    def tick(self) -> None:
        """The status line, if it changed (and ``min_gap`` has passed) or ``every`` has."""
        line = status_line(self.job)
        since = self.clock() - self.last_line
        if (line != self.said and since >= self.min_gap) or since >= self.every:
            self.said = line
            self._print(line)

    def _print(self, text: str) -> None:
        self.last_line = self.clock()
        print(f"[{self.last_line - self.start:7.1f}s] {text}", file=self.out, flush=True)

    def close(self) -> None:
        """The last change, if ``min_gap`` held it back when the job ended."""
        line = status_line(self.job)
        if line != self.said:
            self.said = line
            self._print(line)


class BarProgress:
    """A rich progress bar on a terminal: tasks ended of all, with the live counts."""

    def __init__(self, job: Job) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self.job = job
        self.waiting = ""
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[detail]}"),
        )
        self.task = self.progress.add_task(
            job.spec.name, total=job.spec.total_tasks, detail=_detail(job)
        )
        self.progress.start()

    def __call__(self, event: Event) -> None:
        if event.kind == "gave up":
            self.progress.console.print(f"task {event.task_id} gave up: {event.detail}")
        elif event.kind == "waiting" and event.detail != self.waiting:
            self.waiting = event.detail  # said again only when the master's reason changes
            self.progress.console.print(f"waiting on the master: {event.detail}")
        elif event.kind == "stopping":
            self.progress.console.print(f"stopping: {event.detail}")
        self.progress.update(self.task, completed=self.job.ended_tasks(), detail=_detail(self.job))

    def tick(self) -> None:
        pass  # rich refreshes the bar (and its elapsed time) by itself

    def close(self) -> None:
        self.progress.update(self.task, completed=self.job.ended_tasks(), detail=_detail(self.job))
        self.progress.stop()


def _detail(job: Job) -> str:
    c = job.counts()
    stage = "" if job.done else f"{job.current.name}: "
    return (
        f"{stage}{len(job.live)} running, {c['retries']} retries "
        f"({c['disruptions']} disrupted), {c['failed']} failed"
    )


def status_line(job: Job) -> str:
    c = job.counts()
    return (
        f"{job.ended_tasks()}/{c['tasks']} tasks ended ({c['succeeded']} succeeded, "
        f"{c['failed']} failed), {len(job.live)} running, {job.pending} waiting, "
        f"{c['retries']} retries ({c['disruptions']} disrupted)"
    )


def summary_text(summary: dict[str, Any]) -> str:
    s = summary
    return (
        f"job {s['job']}: {s['tasks']} tasks, {s['succeeded']} succeeded, {s['failed']} failed, "
        f"{s['skipped']} skipped; {s['retries']} retries ({s['disruptions']} disruptions, "
        f"{s['failures']} failures); makespan {s['makespan_seconds']:.1f} s"
        + ending_text(s, "tasks")
    )
