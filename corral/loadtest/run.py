"""Orchestration: start the processes, wait for them, measure the window, drain, report."""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import signal
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import psutil
from rich.console import Console
from rich.live import Live

from corral.loadtest import report, scrape
from corral.loadtest.collect import Collector, MachineTimes, MasterSample, figures
from corral.loadtest.master_http import MasterSession
from corral.loadtest.masters import Masters, describe, kill_leader, start_masters
from corral.loadtest.options import AGENT_RESOURCES, LoadTestOptions, split
from corral.loadtest.processes import Child, ProcessFailed, ProcessGroup
from corral.loadtest.registration import CpuMark, registration_figures

SAMPLE_EVERY = 1.0  # seconds between /metrics scrapes and psutil samples


class LoadTestError(RuntimeError):
    """The test could not run (a process died, the master is unreachable); one line."""


async def _read_worker(child: Child, collector: Collector, ready: list[int]) -> None:
    assert child.process.stdout is not None
    async for raw in child.process.stdout:
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        if line.get("kind") == "ready":
            ready.append(int(line.get("frameworks", 0)))
        else:
            collector.add_line(line)


def machine_times() -> MachineTimes | None:
    try:
        t = psutil.cpu_times()
    except (psutil.Error, OSError):
        return None
    # guest time is already counted in user time on Linux
    parts = t._asdict()
    total = sum(v for k, v in parts.items() if k not in ("guest", "guest_nice"))
    idle = parts.get("idle", 0.0) + parts.get("iowait", 0.0)
    return MachineTimes(total=total, idle=idle, steal=parts.get("steal", 0.0))


class _Sampler:
    """psutil on the master's pid (when this process started it) plus /metrics scrapes."""

    def __init__(
        self,
        session: MasterSession,
        http: str | None,
        pid: int | None,
        others: dict[str, list[int]] | None = None,
    ) -> None:
        self.session = session
        # The agents' and the frameworks' processes, by kind: their CPU is sampled too.
        self.others: dict[str, list[psutil.Process]] = {}
        for kind, pids in (others or {}).items():
            procs = []
            for p in pids:
                with contextlib.suppress(psutil.Error):
                    procs.append(psutil.Process(p))
            self.others[kind] = procs
        self.http = http
        self.proc = psutil.Process(pid) if pid is not None else None
        self._last: tuple[float, float] | None = None  # (time, cpu seconds)
        self.failures = 0

    async def sample(self, collector: Collector) -> None:
        now = time.time()
        http = self.http
        if http is not None:
            try:
                collector.scrapes.append(await scrape.fetch(self.session, http, now))
            except (aiohttp.ClientError, TimeoutError):
                # A scrape cut by --kill-leader-at's kill -9 (it clears ``http`` as it kills,
                # and falls on a sample's second) is the test's doing, not a failure.
                if self.http == http:
                    self.failures += 1
        cpu: float | None = None
        rss: float | None = None
        if self.proc is not None:
            with contextlib.suppress(psutil.Error):
                now = time.time()  # the scrape may have taken a while
                times = self.proc.cpu_times()
                used = times.user + times.system
                if self._last is not None and now > self._last[0]:
                    cpu = (used - self._last[1]) / (now - self._last[0]) * 100.0
                self._last = (now, used)
                rss = self.proc.memory_info().rss / 2**20
        elif collector.scrapes and collector.scrapes[-1].t == now:
            s = collector.scrapes[-1]
            rss = s.value("process_resident_memory_bytes") / 2**20 or None
            used = s.value("process_cpu_seconds_total")
            if self._last is not None and now > self._last[0] and used:
                cpu = (used - self._last[1]) / (now - self._last[0]) * 100.0
            self._last = (now, used)
        groups: dict[str, float] = {}
        for kind, procs in self.others.items():
            with contextlib.suppress(psutil.Error):  # a process ended: no figure this time
                groups[kind] = sum(sum(p.cpu_times()[:2]) for p in procs)
        collector.master.append(MasterSample(now, cpu, rss, machine_times(), groups))


async def _agent_counts(session: MasterSession, http: str) -> tuple[int, int]:
    """The master's ACTIVE and UNREACHABLE agents."""
    s = await scrape.fetch(session, http, time.time())
    return (
        int(s.value("corral_agents", state="active")),
        int(s.value("corral_agents", state="unreachable")),
    )


async def _active_agents(session: MasterSession, http: str) -> int:
    return (await _agent_counts(session, http))[0]


def _cpu_mark(master: psutil.Process | None, agents: list[psutil.Process]) -> CpuMark:
    """CPU seconds so far of the master and of the agent processes (a process that ended counts
    for nothing: the test stops on it anyway)."""
    used = 0.0
    for p in agents:
        with contextlib.suppress(psutil.Error):
            used += sum(p.cpu_times()[:2])
    own: float | None = None
    if master is not None:
        with contextlib.suppress(psutil.Error):
            own = sum(master.cpu_times()[:2])
    return CpuMark(time.time(), own, used, machine_times())


PROGRESS_EVERY = 10.0  # seconds between progress lines while agents register


async def _wait_agents(
    group: ProcessGroup,
    session: MasterSession,
    http: str | None,
    want: int,
    console: Console,
) -> int:
    """Wait until ``want`` agents are ACTIVE; the UNREACHABLE ones then."""
    if http is None:
        await asyncio.sleep(2 + want / 1000)  # nothing to ask: give them time to register
        return 0
    loop = asyncio.get_running_loop()
    began = loop.time()
    deadline = began + 60 + want / 50
    next_line = began + PROGRESS_EVERY
    have = unreachable = -1
    while loop.time() < deadline:
        group.check_alive()
        with contextlib.suppress(aiohttp.ClientError, TimeoutError):
            have, unreachable = await _agent_counts(session, http)
            if have >= want:
                return unreachable
        if loop.time() >= next_line:
            next_line += PROGRESS_EVERY
            console.log(
                f"{have} of {want} agents registered after {loop.time() - began:.0f} s"
                + (f", {unreachable} UNREACHABLE" if unreachable > 0 else "")
            )
        # Each look is a /metrics scrape, whose gauges cost the master a walk of its agents.
        await asyncio.sleep(1.0)
    raise LoadTestError(
        f"only {have} of {want} agents registered in {deadline - began:.0f} s "
        f"({unreachable} UNREACHABLE)"
    )


async def _loss_wave(
    at: float,
    size: int,
    away: float,
    group: ProcessGroup,
    agents: list[Child],
    session: MasterSession,
    http: str,
    want: int,
    console: Console,
) -> dict[str, object]:
    """At ``at`` (wall clock) ``size`` agents lose their streams (SIGUSR1 to the agent
    processes: ``corral agent --loss-wave``); returns when all ``want`` are connected again,
    with how many went and how long they took to be back."""
    await asyncio.sleep(max(0.0, at - time.time()))
    t0 = time.time()
    group.signal(agents, signal.SIGUSR1)
    console.log(f"loss wave: {size} agents cut off for {away:g} s")
    lowest, back, unreachable = want, None, 0
    limit = t0 + away + 60 + size / 50
    while time.time() < limit:
        with contextlib.suppress(aiohttp.ClientError, TimeoutError):
            s = await scrape.fetch(session, http, time.time())
            connected = int(s.value("corral_agents_connected"))
            unreachable = max(unreachable, int(s.value("corral_agents", state="unreachable")))
            lowest = min(lowest, connected)
            if lowest < want and connected >= want:
                back = round(time.time() - t0, 2)
                break
        await asyncio.sleep(0.5)
    result: dict[str, object] = {
        "agents": size,
        "away_seconds": away,
        "fewest_connected": lowest,
        "back_after_seconds": back,
        "unreachable": unreachable,
    }
    console.log(
        f"loss wave: {want - lowest} agents gone at most, all back after {back} s"
        if back is not None
        else f"loss wave: not all agents back in {limit - t0:.0f} s (fewest {lowest})"
    )
    return result


async def _wait_ready(group: ProcessGroup, ready: list[int], workers: int) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 180
    while len(ready) < workers:
        group.check_alive()
        if loop.time() > deadline:
            raise LoadTestError(f"only {len(ready)} of {workers} framework workers subscribed")
        await asyncio.sleep(0.1)


def _live_status(c: Collector, pid_sample: MasterSample | None) -> dict[str, Any]:
    now = time.time()
    recent = c.counts(now - 2.0, now)
    lat = c.latency(now - 2.0, now).quantile(0.99)
    master = ""
    if pid_sample is not None and pid_sample.cpu_percent is not None:
        master = f"{pid_sample.cpu_percent:.0f}% {pid_sample.rss_mb or 0:.0f} MB"
    return {
        "offers": recent["offers"] / 2,
        "accepts": recent["accepts"] / 2,
        "running": recent["running"] / 2,
        "finished": recent["finished"] / 2,
        "p99_ms": None if lat is None else lat * 1000,
        "pending": c.pending(),
        "lost": c.all_lost(),
        "master": master,
    }


async def _kill_leader_at(
    at: float,
    group: ProcessGroup,
    masters: Masters,
    sampler: _Sampler,
    session: MasterSession,
    want: int,
    console: Console,
) -> dict[str, object]:
    """kill -9 the leader at ``at`` (wall clock); the sampler follows the new leader. Returns
    once the new leader offers and all ``want`` agents are connected to it again (or a limit
    passed), with the times: the drain starts after this, so a task whose agent is slow to
    come back is counted by what became of it, not as lost for having been slow."""
    await asyncio.sleep(max(0.0, at - time.time()))
    # The master-side figures stop at the kill: the new leader's counters start from zero.
    sampler.proc = None
    sampler.http = None
    t0 = time.time()
    result = await kill_leader(group, masters)
    console.log(describe(result, masters))
    limit = t0 + 120 + want / 50
    back = None
    while back is None and time.time() < limit and masters.http is not None:
        group.check_alive()  # the new leader gone too: say so now, not at the limit
        with contextlib.suppress(aiohttp.ClientError, TimeoutError):
            s = await scrape.fetch(session, masters.http, time.time())
            if int(s.value("corral_agents_connected")) >= want:
                back = round(time.time() - t0, 2)
                break
        await asyncio.sleep(0.5)
    result["agents_back_seconds"] = back
    console.log(
        f"failover: all {want} agents back with {result['new_leader']} {back} s after the kill"
        if back is not None
        else f"failover: not all {want} agents back in {limit - t0:.0f} s"
    )
    return result


async def _cancel(tasks: list[asyncio.Task[dict[str, object]]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def run_loadtest(opts: LoadTestOptions, console: Console) -> tuple[dict[str, Any], Any]:
    """Run the test; returns the figures and the per-second series (for the plot)."""
    work_dir = Path(tempfile.mkdtemp(prefix="corral-loadtest-"))
    group = ProcessGroup(work_dir)
    collector = Collector()
    readers: list[asyncio.Task[None]] = []
    errors: list[str] = []
    masters: Masters | None = None
    ok = False
    # The loss wave's and the failover's tasks: cancelled before the session they scrape with
    # closes (a stop signal ends the run while they poll).
    background: list[asyncio.Task[dict[str, object]]] = []
    try:
        async with contextlib.AsyncExitStack() as stack:
            session = await stack.enter_async_context(MasterSession())
            stack.push_async_callback(_cancel, background)
            master_pid: int | None = None
            if opts.master is None:
                masters = await start_masters(group, opts)
                master, master_pid = masters.spec, masters.pid
                http_addr: str | None = masters.http
            else:
                master, http_addr = opts.master, opts.master_http
            baseline = 0
            if http_addr is not None:
                try:
                    baseline = await _active_agents(session, http_addr)
                except (aiohttp.ClientError, TimeoutError) as exc:
                    raise LoadTestError(f"cannot read {http_addr}/metrics: {exc}") from None
            console.log(
                f"master {master}; starting {opts.agents} agents in "
                f"{opts.agent_process_count} processes (logs in {work_dir})"
            )
            master_proc: psutil.Process | None = None
            if master_pid is not None:
                with contextlib.suppress(psutil.Error):
                    master_proc = psutil.Process(master_pid)
            before = _cpu_mark(master_proc, [])
            agent_children = await group.start_agents(
                master,
                split(opts.agents, opts.agent_process_count),
                AGENT_RESOURCES,
                split(opts.loss_wave, opts.agent_process_count),
                opts.loss_wave_away,
            )
            unreachable = await _wait_agents(
                group, session, http_addr, baseline + opts.agents, console
            )
            agent_procs = []
            for child in agent_children:
                with contextlib.suppress(psutil.Error):
                    agent_procs.append(psutil.Process(child.pid))
            registration = registration_figures(
                before, _cpu_mark(master_proc, agent_procs), opts.agents, unreachable
            )
            console.log(
                f"{opts.agents} agents registered in {registration['seconds']:g} s "
                f"(master CPU {registration['master_cpu_percent']} %, agents "
                f"{registration['agents_cpu_percent']} % of one core: the limit was "
                f"{registration['limit']}); starting {opts.frameworks} frameworks in "
                f"{opts.framework_process_count} processes"
            )
            workers = await group.start_workers(
                master,
                split(opts.frameworks, opts.framework_process_count),
                opts.mode,
                opts.task_seconds,
                opts.drain_seconds,
                opts.seed,
                # A master killed or failed over: the frameworks must outlive the wait for it.
                failover_timeout=60.0 if opts.masters > 1 or opts.kill_leader_at else 1.0,
            )
            ready: list[int] = []
            readers = [asyncio.create_task(_read_worker(w, collector, ready)) for w in workers]
            await _wait_ready(group, ready, len(workers))
            start = time.time()
            w0, w1 = start + opts.warmup, start + opts.warmup + opts.duration
            others: dict[str, list[int]] = {}
            for c in group.children:
                kind = c.name.split("-")[0]
                if kind in ("agents", "frameworks"):
                    others.setdefault(kind, []).append(c.pid)
            sampler = _Sampler(session, http_addr, master_pid, others)
            await sampler.sample(collector)
            wave: asyncio.Task[dict[str, object]] | None = None
            if opts.loss_wave and http_addr is not None:
                wave = asyncio.create_task(
                    _loss_wave(
                        start + opts.loss_wave_at,
                        opts.loss_wave,
                        opts.loss_wave_away,
                        group,
                        # Only processes given a share: SIGUSR1 would end the others.
                        [
                            c
                            for c, n in zip(
                                agent_children,
                                split(opts.loss_wave, opts.agent_process_count),
                                strict=True,
                            )
                            if n
                        ],
                        session,
                        http_addr,
                        baseline + opts.agents,
                        console,
                    )
                )
                background.append(wave)
            failover: asyncio.Task[dict[str, object]] | None = None
            if opts.kill_leader_at is not None and masters is not None:
                failover = asyncio.create_task(
                    _kill_leader_at(
                        start + opts.kill_leader_at,
                        group,
                        masters,
                        sampler,
                        session,
                        baseline + opts.agents,
                        console,
                    )
                )
                background.append(failover)
            live = Live(console=console, refresh_per_second=2, transient=False)
            with live if console.is_terminal else contextlib.nullcontext():
                step = 0
                while True:
                    step += 1
                    target = min(start + step * SAMPLE_EVERY, w1)
                    # A sample exactly at the window's edges makes the master's figures exact.
                    if start + (step - 1) * SAMPLE_EVERY < w0 < target:
                        target = w0
                        step -= 1
                    await asyncio.sleep(max(0.0, target - time.time()))
                    group.check_alive()
                    await sampler.sample(collector)
                    phase = "warm-up" if time.time() < w0 else "measuring"
                    status = _live_status(collector, collector.master[-1])
                    if console.is_terminal:
                        live.update(report.live_table(phase, time.time() - start, status))
                    elif step % 5 == 0:
                        console.log(
                            f"{phase}: {status['running']:.0f} RUNNING/s, "
                            f"{status['offers']:.0f} offers/s, pending {status['pending']}"
                        )
                    if target >= w1:
                        break
            if failover is not None and not failover.done():
                # The tasks of agents not yet back with the new leader would look lost to a
                # drain that gives up after seconds without progress: they are late, not lost.
                console.log("waiting for the agents to be back with the new leader to drain")
                await asyncio.wait([failover])
            console.log("draining: frameworks stop launching and wait for their tasks")
            group.signal(workers, signal.SIGUSR1)
            try:
                async with asyncio.timeout(opts.DRAIN_LIMIT + 30):
                    await asyncio.gather(*(w.process.wait() for w in workers))
                    await asyncio.gather(*readers)
            except TimeoutError:
                errors.append("framework workers did not finish draining in time")
            for w in workers:
                if w.process.returncode not in (0, None):
                    errors.append(f"{w.name} exited with {w.process.returncode}: {w.tail(3)}")
            await sampler.sample(collector)
            if sampler.failures:
                errors.append(f"{sampler.failures} /metrics scrapes failed")
            if collector.finals < len(workers):
                errors.append(f"{len(workers) - collector.finals} workers sent no final report")
                collector.unterminated += collector.pending()
            wave_result = None
            if wave is not None:
                wave_result = await wave  # settled long before the drain ends, normally
                if wave_result["back_after_seconds"] is None:
                    errors.append("the loss wave's agents did not all come back")
            result = figures(collector, w0, w1, opts.parameters(), errors)
            result["registration"] = registration
            if failover is not None:
                result["failover"] = await failover
                if result["failover"]["agents_back_seconds"] is None:
                    errors.append("the agents did not all come back after the failover")
            if wave_result is not None:
                result["loss_wave"] = wave_result
            ok = True
            return result, collector.series(start, max(time.time(), w1))
    except ProcessFailed as exc:
        raise LoadTestError(str(exc)) from None
    finally:
        for r in readers:
            r.cancel()
        await group.close()
        if masters is not None:
            masters.close()
        if ok:
            shutil.rmtree(work_dir, ignore_errors=True)
        else:
            console.log(f"logs kept in {work_dir}")
