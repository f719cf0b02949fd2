"""The agent's measurement loop: every ``--usage-interval`` seconds, what its running tasks use
goes to the core as one ``UsageMeasured`` event (the core enforces limits, evicts, reclaims and
reports to the master from it: agent/core/usage.py).

The measurement is blocking work (a pass over the host's processes, a few cgroup files per
task), so it runs in a thread; the event is posted from the loop. Container tasks are measured
by the engine's stats (DockerExecutor.sample), in the same event, so limits, eviction under
memory pressure and the master's view count them as they count processes. A measurement that
fails is logged and skipped: the next one comes an interval later.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from corral.agent.core import events as e
from corral.agent.executor_docker import DockerExecutor
from corral.agent.executor_process import ProcessExecutor
from corral.logging import get_logger

log = get_logger("corral.agent.usage")


class UsageMonitor:
    def __init__(
        self,
        executor: ProcessExecutor,
        post: Callable[[e.Event], None],
        clock: Callable[[], float],
        interval: float,
        containers: DockerExecutor | None = None,
    ) -> None:
        self.executor = executor
        self.containers = containers  # container tasks, measured by the engine's stats
        self.post = post
        self.clock = clock
        self.interval = interval
        self.measurements = 0

    async def run(self) -> None:
        source = self.executor.memory.name
        while True:
            await asyncio.sleep(self.interval)
            now = self.clock()
            try:
                tasks = await asyncio.to_thread(self.executor.sample, now)
                if self.containers is not None:
                    tasks += await self.containers.sample(now)
            except Exception as exc:  # a bug or an unreadable host: skip one, say so
                log.warning("usage measurement failed", error=repr(exc))
                continue
            self.measurements += 1
            self.post(e.UsageMeasured(now=now, tasks=tuple(tasks), source=source))
