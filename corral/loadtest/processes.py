"""The load test's processes: a master, agent hosts and framework workers, cleaned up always.

Each child runs in its own process group with its output in a log file of the work directory
(workers' stdout is a pipe: their JSON lines). ``close`` sends SIGTERM to every group it started,
then SIGKILL to what is left after a grace period, or at once if its wait is interrupted.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path

from corral.loadtest.options import LoadTestOptions

CORRAL = (sys.executable, "-m", "corral.cli.main")
WORKER = (sys.executable, "-m", "corral.frameworks.loadtest.worker")


class ProcessFailed(RuntimeError):
    """A child exited early or never got ready; the message carries its log's tail."""


@dataclass
class Child:
    name: str
    process: asyncio.subprocess.Process
    log: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def tail(self, lines: int = 15) -> str:
        try:
            text = self.log.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(text[-lines:])


@dataclass
class ProcessGroup:
    work_dir: Path
    children: list[Child] = field(default_factory=list)

    async def spawn(self, name: str, argv: tuple[str, ...], *, pipe_stdout: bool = False) -> Child:
        log = self.work_dir / f"{name}.log"
        with log.open("wb") as out:
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE if pipe_stdout else out,
                stderr=out,
                start_new_session=True,  # its own process group: Ctrl-C reaches us only
                limit=16 * 1024 * 1024,
            )
        child = Child(name, process, log)
        self.children.append(child)
        return child

    async def kill(self, child: Child) -> None:
        """SIGKILL ``child`` (a fault the test injects) and stop watching it."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
        await child.process.wait()
        self.children.remove(child)

    def check_alive(self) -> None:
        for child in self.children:
            code = child.process.returncode
            if code is not None and code != 0:
                raise ProcessFailed(f"{child.name} exited with {code}:\n{child.tail()}")

    async def start_master(
        self,
        allocation_interval: float,
        launch_pacing: bool,
        launch_latency_target: float,
        timeout: float = 60.0,
        *,
        name: str = "master",
        extra: tuple[str, ...] = (),
        grpc: str = "127.0.0.1:0",
        http: str = "127.0.0.1:0",
    ) -> tuple[Child, str, str]:
        ready = self.work_dir / f"{name}-ready.json"
        child = await self.spawn(
            name,
            (
                *CORRAL,
                "master",
                *("--grpc", grpc, "--http", http),
                *("--ready-file", str(ready)),
                *("--allocation-interval", f"{allocation_interval:g}"),
                # Thousands of agents on two shared cores can miss a heartbeat under load; a
                # load test measures throughput, not failure detection.
                *("--agent-timeout", "120"),
                *("--log-level", "warning"),
                *("--launch-latency-target", f"{launch_latency_target:g}"),
                *(() if launch_pacing else ("--no-launch-pacing",)),
                *extra,
            ),
        )
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while loop.time() < deadline:
            if child.process.returncode is not None:
                raise ProcessFailed(f"the master exited at start:\n{child.tail()}")
            with contextlib.suppress(OSError, ValueError, KeyError):
                info = json.loads(ready.read_text())
                return child, info["grpc"], info["http"]
            await asyncio.sleep(0.05)
        raise ProcessFailed(f"the master did not get ready in {timeout:g} s:\n{child.tail()}")

    async def start_agents(
        self,
        master: str,
        counts: list[int],
        resources: str,
        waves: list[int] | None = None,
        away: float = 5.0,
    ) -> list[Child]:
        """Agent processes of ``counts`` agents each; ``waves[i]`` of process i's agents drop
        their streams on SIGUSR1 (``corral agent --loss-wave``)."""
        out = []
        for i, n in enumerate(counts):
            wave = waves[i] if waves else 0
            work = self.work_dir / f"agents-{i}"
            out.append(
                await self.spawn(
                    f"agents-{i}",
                    (
                        *CORRAL,
                        "agent",
                        "--simulate",
                        *("--count", str(n)),
                        *("--master", master),
                        *("--resources", resources),
                        *("--hostname", f"load-{i}"),
                        *("--work-dir", str(work)),
                        *("--log-level", "warning"),
                        *(
                            ("--loss-wave", str(wave), "--loss-wave-away", f"{away:g}")
                            if wave
                            else ()
                        ),
                    ),
                )
            )
        return out

    async def start_workers(
        self,
        master: str,
        counts: list[int],
        mode: str,
        task_seconds: float,
        drain: float,
        seed: int,
        failover_timeout: float = 1.0,
    ) -> list[Child]:
        out = []
        for i, n in enumerate(counts):
            out.append(
                await self.spawn(
                    f"frameworks-{i}",
                    (
                        *WORKER,
                        *("--master", master),
                        *("--frameworks", str(n)),
                        *("--mode", mode),
                        *("--task-seconds", f"{task_seconds:g}"),
                        *("--name", f"load{i}"),
                        *("--seed", str(seed * 1000 + i)),
                        *("--drain-timeout", f"{drain:g}"),
                        *("--drain-limit", f"{LoadTestOptions.DRAIN_LIMIT:g}"),
                        *("--failover-timeout", f"{failover_timeout:g}"),
                    ),
                    pipe_stdout=True,
                )
            )
        return out

    def signal(self, children: list[Child], sig: int) -> None:
        for child in children:
            if child.process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(child.pid, sig)

    async def close(self, grace: float = 10.0) -> None:
        # Frameworks first (they tear down cleanly), then agents, then the master.
        for child in reversed(self.children):
            self.signal([child], signal.SIGTERM)
        try:
            async with asyncio.timeout(grace):
                await asyncio.gather(*(c.process.wait() for c in self.children))
        except BaseException as exc:
            # Too slow, or the wait itself was stopped (cancelled, a second Ctrl-C): nothing
            # may be left running either way.
            self.signal(self.children, signal.SIGKILL)
            if not isinstance(exc, TimeoutError):
                raise
            await asyncio.gather(*(c.process.wait() for c in self.children))
