"""What a scenario is and how one runs: twice (without the fix, then with it), each time on a
fresh cluster of a real master and simulated agents (or real ones, for a scenario about memory:
``agent_args``), printing a timeline and returning figures. A scenario that is one run read two
ways (``once``) runs once and returns both sets of figures.

A scenario is a controlled experiment on real processes: the master and agents are the ones
users run (``LocalCluster``: subprocesses on free ports), the frameworks run in this process on
the public SDK. Its figures are what the tests assert and what ``--json`` writes.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import grpc
import grpc.aio

from corral.frameworks.sdk import DriverError
from corral.frameworks.sdk.testing import LocalCluster

Figures = dict[str, Any]
SIZES = ("small", "full")


class ScenarioError(RuntimeError):
    """The scenario could not run (the cluster did not come up, a framework failed)."""


# What a run's processes and calls raise when the cluster fails under it: a master or agent
# that exited or never became ready (LocalCluster: RuntimeError, TimeoutError), a call the
# master refused or never answered (grpc), a framework's driver giving up (the SDK), a work dir
# it cannot write (OSError). Each becomes a ScenarioError: one line for the user, no traceback.
_CLUSTER_FAILURES = (grpc.RpcError, DriverError, RuntimeError, TimeoutError, OSError)


def _why(exc: BaseException) -> str:
    """One line for ``exc`` (LocalCluster appends the processes' logs after the first line;
    they stay in the work dir)."""
    if isinstance(exc, grpc.aio.AioRpcError):
        return f"a call to the master failed: {exc.code().name}: {exc.details()}"
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


class Timeline:
    """Lines stamped with seconds since the run began, printed as they happen and kept."""

    def __init__(self, out: TextIO | None, label: str) -> None:
        self.out, self.label = out, label
        self.start = time.monotonic()
        self.lines: list[str] = []

    def now(self) -> float:
        return time.monotonic() - self.start

    def say(self, text: str) -> None:
        line = f"  {self.now():6.1f} s  {text}"
        self.lines.append(line)
        if self.out is not None:
            print(line, file=self.out, flush=True)


async def until(check: Callable[[], bool], timeout: float, what: str) -> bool:
    """Wait for ``check()`` up to ``timeout`` seconds; False if it never held (a figure, not
    an error: "never" is what some scenarios show)."""
    del what  # named at the call for the reader
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not check():
        if loop.time() >= end:
            return False
        await asyncio.sleep(0.05)
    return True


async def must(check: Callable[[], bool], timeout: float, what: str) -> None:
    """Wait for something the scenario needs to go on; ScenarioError naming it if not."""
    if not await until(check, timeout, what):
        raise ScenarioError(f"timed out after {timeout:g} s waiting for {what}")


Body = Callable[[LocalCluster, Timeline, bool, str], Awaitable[Figures]]


@dataclass(frozen=True)
class Scenario:
    """``run(cluster, timeline, with_fix, size)`` drives one run on a started cluster and
    returns its figures. ``agents``: (name, resources, attributes) per simulated agent."""

    name: str
    summary: str  # one line, for --list
    symptom: str
    cause: str
    fix: str
    agents: Callable[[str], list[tuple[str, str, dict[str, str]]]]
    run: Body
    allocation_interval: float = 0.2
    # How its agents run: simulated (the default) or real processes with these flags.
    agent_args: tuple[str, ...] = ("--simulate",)
    # One run, read without and with the fix: ``run`` returns {"without_fix": figures,
    # "with_fix": figures} (it is called once, with ``with_fix`` True).
    once: bool = False


async def run_once(
    scenario: Scenario, with_fix: bool, size: str, work_dir: Path, out: TextIO | None
) -> Figures:
    label = "one run" if scenario.once else "with the fix" if with_fix else "without the fix"
    if out is not None:
        print(f"{scenario.name}, {label}:", file=out, flush=True)
    try:
        async with fresh_cluster(scenario, size, work_dir) as cluster:
            timeline = Timeline(out, label)
            return await scenario.run(cluster, timeline, with_fix, size)
    except ScenarioError:
        raise
    except _CLUSTER_FAILURES as exc:
        raise ScenarioError(_why(exc)) from exc


@contextlib.asynccontextmanager
async def fresh_cluster(
    scenario: Scenario, size: str, work_dir: Path
) -> AsyncIterator[LocalCluster]:
    """A started cluster of ``scenario``'s agents (a run's; a scenario comparing several
    fixes starts one per fix)."""
    async with LocalCluster(
        agents=0,
        work_dir=work_dir,
        master_args=("--allocation-interval", str(scenario.allocation_interval)),
        agent_args=scenario.agent_args,
    ) as cluster:
        agents = scenario.agents(size)
        for name, resources, attributes in agents:
            await cluster.add_agent(name, resources, attributes=attributes)
        await cluster.wait_for_agents(len(agents), 60)
        yield cluster


async def run_scenario(
    scenario: Scenario, size: str, work_dir: Path, out: TextIO | None
) -> dict[str, Any]:
    """Both runs and the story: ``{"scenario", "without_fix", "with_fix"}``."""
    if scenario.once:
        both = await run_once(scenario, True, size, work_dir / "run", out)
        without, with_fix = both["without_fix"], both["with_fix"]
    else:
        without = await run_once(scenario, False, size, work_dir / "without_fix", out)
        with_fix = await run_once(scenario, True, size, work_dir / "with_fix", out)
    if out is not None:
        print(file=out)
        for title, text in (("Symptom", scenario.symptom), ("Cause", scenario.cause)):
            print(f"{title}: {text}", file=out)
        print(f"Fix: {scenario.fix}", file=out)
        print(file=out)
        print(_table(without, with_fix), file=out, flush=True)
    return {"scenario": scenario.name, "without_fix": without, "with_fix": with_fix}


def _table(without: Figures, with_fix: Figures) -> str:
    names = [k for k in without if not isinstance(without[k], str) or len(without[k]) < 40]
    width = max((len(n) for n in names), default=0)
    rows = [f"{'figure':<{width}}  {'without fix':>12}  {'with fix':>12}"]
    for n in names:
        rows.append(f"{n:<{width}}  {_cell(without[n]):>12}  {_cell(with_fix.get(n)):>12}")
    return "\n".join(rows)


def _cell(value: Any) -> str:
    if value is None:
        return "never"
    if isinstance(value, float):
        return f"{value:.1f}"
    return str(value)
