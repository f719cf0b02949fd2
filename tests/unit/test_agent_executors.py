"""Executors in isolation: event order, signals, sandbox names."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from corral.agent.core import events as e
from corral.agent.core.types import CommandSpec, Signal, SimulationSpec, TaskSpec
from corral.agent.executor_process import ProcessExecutor, safe_name
from corral.agent.executor_simulated import SimulatedExecutor


async def until(cond: Callable[[], object], timeout: float = 10.0) -> None:
    async with asyncio.timeout(timeout):
        while not cond():
            await asyncio.sleep(0.01)


def test_safe_name_keeps_ids_inside_the_sandbox_root() -> None:
    assert safe_name("task-1.a_b") == "task-1.a_b"
    assert safe_name("../../etc/passwd") == ".._.._etc_passwd"
    assert safe_name("..") == "_.."
    assert safe_name("") == "_"


async def test_simulated_task_starts_then_exits_with_its_code() -> None:
    got: list[e.Event] = []
    sim = SimulatedExecutor(got.append, lambda: 1.0)
    sim.start(TaskSpec("t", "f", simulation=SimulationSpec(0.01, 4)), "a")
    sim.start(TaskSpec("k", "f", simulation=SimulationSpec(600, 0)), "a")
    await until(lambda: len(got) == 3)
    assert got[:2] == [
        e.ProcessStarted(now=1.0, stimulus_id="simulated:t", task_id="t", framework_id="f"),
        e.ProcessStarted(now=1.0, stimulus_id="simulated:k", task_id="k", framework_id="f"),
    ]
    assert got[2] == e.ProcessExited(
        now=1.0, stimulus_id="simulated:t", task_id="t", framework_id="f", exit_code=4
    )
    sim.signal("f", "k", Signal.TERM)
    await until(lambda: len(got) == 4)
    assert got[3] == e.ProcessExited(
        now=1.0, stimulus_id="simulated:k", task_id="k", framework_id="f", signal=15
    )
    assert len(sim) == 0


async def test_process_executor_reuses_no_sandbox_and_reports_launch_failure(
    tmp_path: Path,
) -> None:
    got: list[e.Event] = []
    ex = ProcessExecutor(tmp_path, got.append, lambda: 0.0)
    task = TaskSpec("t", "f", command=CommandSpec(value="echo $CORRAL_TASK_ID", shell=True))
    for _ in range(2):
        ex.start(task, "a")
        await until(lambda: any(isinstance(g, e.ProcessExited) for g in got))
        got.clear()
    root = tmp_path / "sandboxes" / "f"
    assert sorted(p.name for p in root.iterdir()) == ["t", "t.2"]
    assert (root / "t.2" / "stdout").read_text() == "t\n"
    ex.start(TaskSpec("x", "f", command=CommandSpec(arguments=("/no/such/file",))), "a")
    await until(lambda: got)
    (failed,) = got
    assert isinstance(failed, e.LaunchFailed) and "/no/such/file" in failed.message
    await ex.close()


async def test_simulated_tasks_started_together_end_together_and_one_can_be_killed() -> None:
    got: list[e.Event] = []
    sim = SimulatedExecutor(got.append, lambda: 2.0)
    for name, seconds in (("a", 0.05), ("b", 600.0), ("c", 0.05)):  # b only ends when told
        sim.start(TaskSpec(name, "f", simulation=SimulationSpec(seconds, 0)), "x")
    sim.start(TaskSpec("early", "f", simulation=SimulationSpec(0.05, 0)), "x")
    sim.signal("f", "early", Signal.KILL)  # before it started: it never runs
    assert len(sim) == 4
    await until(lambda: len(got) == 4)
    assert got == [
        *(
            e.ProcessStarted(now=2.0, stimulus_id=f"simulated:{n}", task_id=n, framework_id="f")
            for n in "abc"
        ),
        e.ProcessExited(
            now=2.0, stimulus_id="simulated:early", task_id="early", framework_id="f", signal=9
        ),
    ]
    sim.signal("f", "b", Signal.TERM)
    sim.signal("f", "b", Signal.TERM)  # a second signal changes nothing
    await until(lambda: len(got) == 7)
    ended = {g.task_id: g for g in got[4:]}
    assert ended["b"] == e.ProcessExited(
        now=2.0, stimulus_id="simulated:b", task_id="b", framework_id="f", signal=15
    )
    ran = [ended["a"], ended["c"]]
    assert all(isinstance(g, e.ProcessExited) and g.exit_code == 0 for g in ran)
    assert got.index(ended["a"]) + 1 == got.index(ended["c"]) or got.index(
        ended["c"]
    ) + 1 == got.index(ended["a"]), "a and c, started together, did not end together"
    assert len(sim) == 0
    sim.start(TaskSpec("late", "f", simulation=SimulationSpec(600, 0)), "x")
    await until(lambda: len(got) == 8)
    await sim.close()  # cancels its timer: nothing more arrives
    assert len(sim) == 0


async def test_simulated_tasks_of_one_batch_are_handed_over_in_one_call() -> None:
    batches: list[list[str]] = []
    one: list[e.Event] = []
    sim = SimulatedExecutor(
        one.append, lambda: 0.0, lambda evs: batches.append([type(x).__name__ for x in evs])
    )
    for name in ("a", "b"):
        sim.start(TaskSpec(name, "f", simulation=SimulationSpec(0.01, 0)), "x")
    await until(lambda: len(batches) == 2)
    assert batches == [["ProcessStarted"] * 2, ["ProcessExited"] * 2] and one == []
