"""Hello, Corral: launch N tasks that say hello, wait until all end, print a summary."""

import asyncio
import sys

from corral.frameworks import sdk


class Hello(sdk.Scheduler):
    def __init__(self, count: int) -> None:
        self.count = count
        self.pending = [
            sdk.task(f"hello-{i}", "echo hello from $CORRAL_TASK_ID", cpus=0.1, mem=32)
            for i in range(count)
        ]
        self.ended: dict[str, str] = {}  # task id -> terminal state

    async def offers(self, driver: sdk.Driver, offers: list[sdk.Offer]) -> None:
        for offer in offers:
            packer = sdk.OfferPacker(offer)
            self.pending = packer.add_all(self.pending)
            try:
                await driver.launch([offer], packer.tasks)  # no tasks: declines the offer
            except sdk.CallError as err:  # e.g. the offer was rescinded meanwhile: retry
                print(f"launch refused: {err}")
                self.pending += packer.tasks
        if not self.pending:
            await driver.suppress()  # nothing left to launch: no more offers, please

    async def status(self, driver: sdk.Driver, status: sdk.TaskStatus) -> None:
        if sdk.is_terminal(status.state):
            self.ended[status.task_id] = sdk.state_name(status.state)
            if len(self.ended) == self.count:
                await driver.stop()


async def main(
    master: str = "127.0.0.1:5050", tasks: int = 5, role: str = "*", connect_timeout: float = 10
) -> int:
    hello = Hello(tasks)
    info = sdk.FrameworkInfo(name="hello", role=role)
    async with sdk.Driver(hello, info, master, connect_timeout=connect_timeout) as driver:
        await driver.wait()
    for task_id, state in sorted(hello.ended.items()):
        print(f"{task_id}: {state}")
    finished = sum(state == "FINISHED" for state in hello.ended.values())
    print(f"{finished} of {tasks} tasks finished")
    return 0 if finished == tasks else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:5050")))
