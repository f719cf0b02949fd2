"""The allocator's CPU per framework added (a subscription) at many agents: ``--agents``
agents added to a ``DrfAllocator``, then ``--frameworks`` frameworks, timed with process time.

Run a build's tree from outside the checkout (docs/performance.md, "Running another build's
code") to compare two builds, alternated:

    .venv/bin/python scripts/framework_add_bench.py --agents 50000 --frameworks 1000
"""

from __future__ import annotations

import argparse
import time

from corral.master.allocator.numpy_allocator import DrfAllocator

AGENT = (24.0, 4096.0, 4096.0, 0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=50_000)
    parser.add_argument("--frameworks", type=int, default=1_000)
    args = parser.parse_args()
    if args.agents < 1 or args.frameworks < 1:
        parser.error("--agents and --frameworks must be at least 1")
    alloc = DrfAllocator()
    for i in range(args.agents):
        alloc.add_agent(f"agent-{i}", AGENT, {}, [])
    started = time.process_time()
    for j in range(args.frameworks):
        alloc.add_framework(f"framework-{j}", "*")
    spent = time.process_time() - started
    print(
        f"{args.agents} agents: {args.frameworks} frameworks added in {spent:.2f} s of CPU, "
        f"{spent / args.frameworks * 1000:.2f} ms each"
    )


if __name__ == "__main__":
    main()
