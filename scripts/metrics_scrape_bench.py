"""What one /metrics scrape costs the master at N agents that report usage (issue #48: at
50,000 agents a scrape walked a Gauge child per agent twice).

A real master (its runtime and registry; master/bench/synthetic_master.py gives it N agents by
registration events, no agent processes), each agent given a usage report, then R scrapes as
the HTTP handler makes them: ``refresh_gauges`` on the core's task, then ``generate_latest``.
Prints the CPU each part took per scrape and the body's size.

    .venv/bin/python scripts/metrics_scrape_bench.py --agents 50000 --rounds 3
"""

from __future__ import annotations

import argparse
import asyncio
import time

from prometheus_client import generate_latest

from corral.logging import configure
from corral.master.bench.synthetic_master import master_with_agents
from corral.master.core.master import MasterCore
from corral.master.core.types import AgentUsage


async def main(agents: int, rounds: int) -> None:
    master = await master_with_agents(agents, zones=10)
    rt = master.runtime
    try:

        def report(core: MasterCore) -> None:
            now = time.time()
            for a in core.agents.values():
                a.usage = AgentUsage(now, 4096, 1000, 3096, 1.0, "", 0.0, "", 0.5, 100, "bench")

        await rt.query(report)
        for _ in range(rounds):
            started = time.process_time()
            await rt.query(lambda _core: rt.refresh_gauges())
            refreshed = time.process_time()
            body = generate_latest(rt.metrics.registry)
            done = time.process_time()
            print(
                f"refresh_gauges {1000 * (refreshed - started):.0f} ms CPU, generate_latest "
                f"{1000 * (done - refreshed):.0f} ms CPU, body {len(body) / 1e6:.2f} MB"
            )
    finally:
        await master.stop()


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--agents", type=int, default=50_000)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    configure("warning")  # not a line per registered agent
    asyncio.run(main(args.agents, args.rounds))
