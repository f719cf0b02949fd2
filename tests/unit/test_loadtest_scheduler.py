"""The load framework's count of tasks that ran on after being reported lost (a loss wave's
"run twice" figure): counted once per task, never for a duplicate of a counted status."""

from __future__ import annotations

from typing import Any, cast

from corral.frameworks import sdk
from corral.frameworks.loadtest.scheduler import (
    Counters,
    LoadScheduler,
    Mode,
    TaskShape,
    _Pending,
)


def _status(task_id: str, state: Any) -> sdk.TaskStatus:
    return sdk.TaskStatus(task_id=task_id, state=state, uuid=b"u")


async def test_a_task_reported_running_after_lost_is_counted_once() -> None:
    counters = Counters()
    s = LoadScheduler("t", Mode.LAUNCH, TaskShape(), lambda: counters, clock=lambda: 0.0)
    s.pending["a"] = _Pending(0.0)
    s.pending["b"] = _Pending(0.0)
    driver = cast(sdk.Driver, None)  # status() does not call the driver
    await s.status(driver, _status("a", sdk.TaskState.TASK_STATE_LOST))
    await s.status(driver, _status("b", sdk.TaskState.TASK_STATE_FINISHED))
    assert (counters.lost, counters.finished, counters.revived) == (1, 1, 0)
    await s.status(driver, _status("b", sdk.TaskState.TASK_STATE_FINISHED))  # a duplicate
    await s.status(driver, _status("a", sdk.TaskState.TASK_STATE_LOST))  # a duplicate
    assert counters.revived == 0
    await s.status(driver, _status("a", sdk.TaskState.TASK_STATE_RUNNING))  # it ran on
    await s.status(driver, _status("a", sdk.TaskState.TASK_STATE_FINISHED))
    assert counters.revived == 1, "one task, counted once"
    assert counters.lost == 1
