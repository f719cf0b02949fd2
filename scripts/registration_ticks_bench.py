"""The master core's allocation ticks while many agents register and no framework is there:
``--agents`` agents registered ``--batch`` at a time, the core's clock moved 0.5 s and an
allocation tick handled after each batch (a why-pending scan every 5 s of it), the ticks timed
with process time: their total and the largest.

Run a build's tree from outside the checkout (docs/performance.md, "Running another build's
code") to compare two builds, alternated:

    .venv/bin/python scripts/registration_ticks_bench.py --agents 50000
"""

from __future__ import annotations

import argparse
import time

from corral.master.allocator import make_allocator
from corral.master.core import events as ev
from corral.master.core.config import MasterConfig
from corral.master.core.master import MasterCore
from corral.master.core.types import AgentSpec
from corral.resources import parse_resources

SHAPE = "cpus:24;mem:4096;disk:4096"  # Mesos' allocator benchmark's agent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=50_000)
    parser.add_argument("--batch", type=int, default=500)
    args = parser.parse_args()
    core = MasterCore(MasterConfig(), make_allocator("numpy"), "m1", None)
    resources = parse_resources(SHAPE)
    now, seq, ticks = 1000.0, 0, []
    while seq < args.agents:
        for _ in range(min(args.batch, args.agents - seq)):
            seq += 1
            spec = AgentSpec(
                agent_id="",
                hostname=f"host-{seq}",
                resources=resources,
                attributes={"zone": f"z{seq % 10}"},
            )
            core.handle(
                ev.AgentRegister(
                    stimulus_id="register",
                    now=now,
                    connection=seq,
                    spec=spec,
                    new_agent_id=f"m1-S{seq}",
                    new_secret="secret",
                )
            )
        now += 0.5
        started = time.process_time()
        core.handle(ev.AllocationTick(stimulus_id="tick", now=now, seed=7))
        ticks.append(time.process_time() - started)
    top = ", ".join(f"{t * 1e3:.1f}" for t in sorted(ticks)[-5:])
    print(
        f"{args.agents} agents, {len(ticks)} ticks: total {sum(ticks) * 1e3:.0f} ms, "
        f"largest five {top} ms"
    )


if __name__ == "__main__":
    main()
