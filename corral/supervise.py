"""Background tasks watched: none may end unnoticed.

A task that fails (or, for one meant to run for the life of its process, ends at all) is
logged as an error with its name and exception, and its owner is told, to count it and to stop
or restart what depended on it. Without this an exception in a timer loop ended the loop and
nothing else: every timer of the master stopped, silently. Cancellation is how owners stop
their tasks, so it is not a failure.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

import structlog

# What an owner is told: the task, and its exception (None: it returned but should not have).
OnFailure = Callable[[asyncio.Task[Any], BaseException | None], None]


def watch(
    task: asyncio.Task[Any],
    log: structlog.typing.FilteringBoundLogger,
    *,
    forever: bool = False,
    on_failure: OnFailure | None = None,
    stopping: Callable[[], bool] | None = None,
) -> asyncio.Task[Any]:
    """Report ``task`` ending with an exception, or (``forever``) ending at all, unless it was
    cancelled or ``stopping()`` says its owner is shutting down. Returns ``task``."""

    def done(t: asyncio.Task[Any]) -> None:
        if t.cancelled() or (stopping is not None and stopping()):
            return
        exc = t.exception()  # retrieved here, so asyncio does not log it again at exit
        if exc is None and not forever:
            return
        log.error(
            "background_task_failed",
            task=t.get_name(),
            error=repr(exc) if exc is not None else "returned, but should run until stopped",
            exc_info=exc,
        )
        if on_failure is not None:
            on_failure(t, exc)

    task.add_done_callback(done)
    return task


def spawn(
    coro: Coroutine[Any, Any, Any],
    name: str,
    log: structlog.typing.FilteringBoundLogger,
    *,
    forever: bool = False,
    on_failure: OnFailure | None = None,
    stopping: Callable[[], bool] | None = None,
) -> asyncio.Task[Any]:
    """``asyncio.create_task(coro, name=name)``, watched (see ``watch``)."""
    task = asyncio.get_running_loop().create_task(coro, name=name)
    return watch(task, log, forever=forever, on_failure=on_failure, stopping=stopping)
