"""The FakeMaster example of docs/sdk.md ("Testing your framework"), run as written there."""

from __future__ import annotations

from corral.frameworks import sdk
from corral.frameworks.sdk.testing import FakeMaster


class MyScheduler(sdk.Scheduler):
    async def offers(self, driver: sdk.Driver, offers: list[sdk.Offer]) -> None:
        for offer in offers:
            await driver.launch([offer], [sdk.task("t", "true", cpus=1, mem=64)])


async def test_launches_on_an_offer() -> None:
    async with FakeMaster() as master:
        info = sdk.FrameworkInfo(name="mine", role="*")
        async with sdk.Driver(MyScheduler(), info, master.address, tls=master.tls) as driver:
            await master.send_offers(
                [
                    sdk.Offer(
                        id="o1",
                        agent_id="a1",
                        hostname="h1",
                        resources=sdk.Resources(cpus=2, mem=512),
                        attributes={"zone": "a"},
                    ),
                ]
            )
            (accept,) = await master.wait_for_calls("Accept")
            (launched,) = accept.operations[0].launch.tasks
            assert launched.agent_id == "a1"
            # A status with a uuid must be acknowledged; the driver does it after the callback.
            await master.send_update(
                [
                    sdk.TaskStatus(
                        task_id=launched.task_id,
                        agent_id="a1",
                        uuid=b"any-bytes",
                        state=sdk.TaskState.TASK_STATE_FINISHED,
                        exit_code=0,
                    ),
                ]
            )
            await master.wait_for(
                lambda: len(master.calls_of("Acknowledge")) == 1, what="the acknowledgement"
            )
            await driver.stop()
    assert master.subscriptions[0].framework_info.name == "mine"
