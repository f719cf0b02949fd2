"""A test framework for compose_smoke.sh: long-running `sleep` tasks, at most PER_AGENT on any
agent, so killing one agent leaves tasks running elsewhere. It prints each status and runs until
it is killed (the smoke test tears it down). Public SDK only, like any framework.

    python3 sleeper.py --master master:5050 --tasks 4 --per-agent 2
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections import Counter

from corral.frameworks import sdk


class Sleeper(sdk.Scheduler):
    def __init__(self, count: int, per_agent: int, seconds: int) -> None:
        self.per_agent = per_agent
        self.pending = [
            sdk.task(f"sleep-{i}", f"sleep {seconds}", cpus=0.1, mem=16) for i in range(count)
        ]
        self.placed: Counter[str] = Counter()  # agent id -> tasks launched there

    async def offers(self, driver: sdk.Driver, offers: list[sdk.Offer]) -> None:
        for offer in offers:
            packer = sdk.OfferPacker(offer)
            room = self.per_agent - self.placed[offer.agent_id]
            keep = []
            for task in self.pending:
                if room > 0 and packer.add(task):
                    room -= 1
                else:
                    keep.append(task)
            self.pending = keep
            try:
                await driver.launch([offer], packer.tasks, refuse_seconds=1)
            except sdk.CallError as err:
                print(f"launch refused: {err}", flush=True)
                self.pending += packer.tasks
                continue
            self.placed[offer.agent_id] += len(packer.tasks)
        if not self.pending:
            await driver.suppress()

    async def status(self, driver: sdk.Driver, status: sdk.TaskStatus) -> None:
        state = sdk.state_name(status.state)
        print(f"{status.task_id} {state} on {status.agent_id}", flush=True)


async def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--master", default="master:5050")
    parser.add_argument("--tasks", type=int, default=4)
    parser.add_argument("--per-agent", type=int, default=2)
    parser.add_argument("--seconds", type=int, default=600)
    args = parser.parse_args(argv)
    scheduler = Sleeper(args.tasks, args.per_agent, args.seconds)
    info = sdk.FrameworkInfo(name="sleeper")
    async with sdk.Driver(scheduler, info, master=args.master, connect_timeout=30) as driver:
        await driver.wait()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
