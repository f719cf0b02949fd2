"""How a run-to-completion framework (``corral run batch``, ``corral run gang``) runs beside
its driver: subscribe, then wait for one of four endings, and say which in its summary.

- the job finished: tear down (nothing of it stays on the master); a demand the master refused
  for good is raised after that;
- the driver ended first: its reason is raised;
- SIGINT or SIGTERM (``stop``): tear down, its live processes killed, or with ``keep_running``
  leave the framework to the master's failover timeout;
- nothing moved for ``give_up_after`` seconds: tear down, saying why the master left it waiting.

While the job waits on the master, the master's reason is asked every ``check_every`` seconds
(``sdk.why_pending``, with the driver's own credential: a principal may explain its own
framework without any grant) and told as a ``waiting`` note; a master that refuses to say
(PERMISSION_DENIED) is not asked again. The two frameworks differ only in their words and in
what "stalled" means, which their schedulers answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

import grpc

from corral.frameworks import sdk


class RunningJob(Protocol):
    """What the loop reads of a framework's scheduler."""

    finished: asyncio.Event
    failure: sdk.CallError | None  # a refusal that never changes: the job cannot run
    clock: Callable[[], float]

    def stalled_for(self) -> float:
        """Seconds the job has waited on the master with nothing moving; 0 when it does not
        wait."""
        ...


@dataclass(frozen=True)
class JobTerms:
    """A framework's side of the loop."""

    noun: str  # what its processes are called: "tasks", "workers"
    live: Callable[[], int]  # how many of them run now
    note: Callable[[str, str], None]  # tell the user (kind, detail): "waiting", "stopping"
    gave_up: Callable[[float, str], str]  # (give_up_after, the master's why) -> the reason
    settle: Callable[[], Awaitable[None]] | None = None  # let a demand update in flight land
    tick: Callable[[], None] | None = None  # called every second of the loop (progress lines)


def new_ending() -> dict[str, Any]:
    return {"stopped_by": None, "gave_up": None, "killed": 0, "left_running": 0}


async def run_to_end(
    driver: sdk.Driver,
    job: RunningJob,
    terms: JobTerms,
    *,
    stop: sdk.StopSignals | None,
    keep_running: bool,
    give_up_after: float | None,
    check_every: float,
) -> dict[str, Any]:
    """Enter ``driver`` and run until one of the endings; how it ended (``stopped_by``,
    ``gave_up``, ``killed``, ``left_running``, ``framework_id``)."""
    ending = new_ending()
    async with contextlib.AsyncExitStack() as stack:
        entering = stack.enter_async_context(driver)
        if stop is None:
            await entering
        elif await stop.unless_stopped(entering) is None:
            ending["stopped_by"] = stop.received  # before it subscribed: nothing to end
            return ending
        ending["framework_id"] = driver.framework_id
        waiting = asyncio.ensure_future(driver.wait())
        finished = asyncio.ensure_future(job.finished.wait())
        stopping: asyncio.Future[Any] = asyncio.ensure_future(
            stop.wait() if stop is not None else asyncio.get_running_loop().create_future()
        )
        asked_at = -math.inf
        why_waiting = WhyWaiting(driver)
        try:
            while True:
                # A second's tick: cheap (no call), and bounds how late a give-up comes.
                await asyncio.wait(
                    {waiting, finished, stopping}, timeout=1.0, return_when=asyncio.FIRST_COMPLETED
                )
                if terms.tick is not None:
                    terms.tick()
                if waiting.done():
                    waiting.result()  # the driver ended first: raise why
                    break
                if finished.done():
                    if terms.settle is not None:
                        await terms.settle()
                    await _end(driver, terms, ending, teardown=True)  # outside callbacks
                    if job.failure is not None:
                        raise job.failure
                    break
                if stopping.done():
                    ending["stopped_by"] = stopping.result()
                    terms.note("stopping", _leaving(terms, keep_running))
                    await _end(driver, terms, ending, teardown=not keep_running)
                    break
                stalled = job.stalled_for()
                due = stalled >= check_every and job.clock() - asked_at >= check_every
                giving_up = give_up_after is not None and stalled >= give_up_after
                if due or giving_up:
                    asked_at = job.clock()
                    why = await why_waiting.ask()
                    terms.note("waiting", why)
                    if give_up_after is not None and giving_up:
                        ending["gave_up"] = terms.gave_up(give_up_after, why)
                        await _end(driver, terms, ending, teardown=True)
                        break
        finally:
            for t in (waiting, finished, stopping):
                t.cancel()
    return ending


class WhyWaiting:
    """Asks the master why the driver's framework waits, as one line, until the master says
    this principal may not ask (PERMISSION_DENIED): every later ask repeats that, with no call.
    A job stalled for ten minutes must not make the master record a refusal every 5 s."""

    def __init__(self, driver: sdk.Driver) -> None:
        self.driver = driver
        self.refused = ""  # the master's refusal, once it refused
        self.calls = 0

    async def ask(self) -> str:
        """The master's why-pending for each unmet demand, as one line."""
        if self.refused:
            return self.refused
        driver = self.driver
        self.calls += 1
        try:
            # The master of the driver's connection (with several, the leader it follows), with
            # the driver's credential: the framework's own principal may explain it.
            pending = await sdk.why_pending(
                driver.address or driver.master, driver.framework_id, tls=driver.tls
            )
        except sdk.CallError as err:
            if err.code == grpc.StatusCode.PERMISSION_DENIED:
                self.refused = f"the master does not say why to this principal ({err.message})"
                return self.refused + "; not asking again"
            # The master is away: say so, and ask again next time.
            return f"the master did not say why ({err.code.name}: {err.message})"
        if not pending:
            return "no demand is pending at the master"
        return "; ".join(f"{p.name}: {p.unmet} of {p.count} unplaced: {p.summary}" for p in pending)


def _leaving(terms: JobTerms, keep_running: bool) -> str:
    live = terms.live()
    if keep_running:
        return f"leaving the framework and its {live} running {terms.noun} to fail over"
    return f"tearing the framework down: its {live} running {terms.noun} are killed"


async def _end(
    driver: sdk.Driver, terms: JobTerms, ending: dict[str, Any], *, teardown: bool
) -> None:
    """Tear the framework down (its live processes are killed) or, when not ``teardown``, stop
    the driver and leave the framework to the master's failover timeout."""
    live = terms.live()
    if teardown:
        try:
            await driver.teardown()
            ending["killed"] = live
            return
        except sdk.CallError as err:  # not connected: the master's failover timeout will do
            ending["teardown_failed"] = f"{err.code.name}: {err.message}"
    await driver.stop()
    ending["left_running"] = live


def ending_text(s: dict[str, Any], noun: str) -> str:
    """How a run that did not reach its end ended, and what became of its running ``noun``,
    for the summary line ("" when it did reach it)."""
    if s.get("gave_up"):
        why = f"; gave up: {s['gave_up']}"
    elif s.get("stopped_by"):
        why = f"; stopped by {s['stopped_by']}"
    else:
        return ""
    if s.get("left_running"):
        left = f"{s['left_running']} running {noun} left to fail over"
        if s.get("framework_id"):
            left += f" with framework {s['framework_id']}"
        if s.get("teardown_failed"):
            left += f" (tearing down failed: {s['teardown_failed']})"
        return f"{why}; {left}"
    if s.get("framework_id"):
        return f"{why}; framework torn down, {s.get('killed', 0)} running {noun} killed"
    return f"{why} before it subscribed"
