"""A framework that launches many tasks and then stops reading its event stream (a wedged
scheduler): raw gRPC, no SDK, so nothing reads the stream behind the test's back. Used by the
integration test and by scripts/slow_framework.py, which measures the master's memory."""

from __future__ import annotations

import argparse
import asyncio
import time

import grpc
import grpc.aio

from corral.frameworks.sdk import tls as sdk_tls
from corral.limits import MAX_MESSAGE_BYTES
from corral.v1 import common_pb2, scheduler_pb2, scheduler_pb2_grpc

# The framework floods one agent with 10,000-task accepts: admission control would refuse those
# (launches in flight per agent, unacknowledged statuses per framework) and pace the rest. What
# these runs exercise is the bound on a stream's queue, the last line of defence once tasks are
# admitted, so the admission bounds are moved out of the way. The statuses bound must be: the
# first accept's 10,000 tasks report RUNNING (10,000 statuses, the default bound) and soon
# FINISHED, and the framework never acknowledges, so a second accept that reached the master after
# them was refused (RESOURCE_EXHAUSTED) -- a race the framework lost whenever its process was
# slow between its accepts (a loaded machine), with TLS or without. 40,000 is every status of
# 20,000 tasks (RUNNING and FINISHED).
FLOOD_MASTER_ARGS = (
    *("--no-launch-pacing", "--max-agent-launches", "20000"),
    *("--max-framework-pending-statuses", "40000"),
)

OPTIONS = [
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
]


class StalledFramework:
    def __init__(
        self, master: str, name: str = "stalled", tls: sdk_tls.Credentials | None = None
    ) -> None:
        self.channel = sdk_tls.aio_channel(master, sdk_tls.resolve(tls), OPTIONS)
        self.stub = scheduler_pb2_grpc.SchedulerStub(self.channel)  # type: ignore[no-untyped-call]
        self.info = common_pb2.FrameworkInfo(name=name, role="*", failover_timeout=3600)
        self.framework_id = ""
        self.stream_id = ""
        self.call: (
            grpc.aio.UnaryStreamCall[scheduler_pb2.SubscribeRequest, scheduler_pb2.Event] | None
        ) = None

    async def subscribe(self) -> None:
        if self.framework_id:
            self.info.id = self.framework_id
        self.call = self.stub.Subscribe(scheduler_pb2.SubscribeRequest(framework_info=self.info))
        first = await self.next_event()
        assert first.HasField("subscribed"), first
        self.framework_id = first.subscribed.framework_id
        self.stream_id = first.subscribed.stream_id

    async def next_event(self) -> scheduler_pb2.Event:
        assert self.call is not None
        event = await self.call.read()
        assert isinstance(event, scheduler_pb2.Event), event
        return event

    async def launch(self, tasks: int, id_length: int = 200, seconds: float = 1.0) -> int:
        """Accept offers (read from the stream) with ``tasks`` simulated tasks in all, each
        ``seconds`` long, with ids ``id_length`` characters long (long ids: more bytes per
        status). Returns how many were launched."""
        launched = 0
        while launched < tasks:
            event = await self.next_event()
            if not event.HasField("offers"):
                continue
            for offer in event.offers.offers:
                count = min(tasks - launched, 10_000, int(offer.resources.cpus / 0.01))
                infos = [
                    common_pb2.TaskInfo(
                        task_id=f"{launched + i:08d}".rjust(id_length, "t"),
                        name="stalled",
                        agent_id=offer.agent_id,
                        command=common_pb2.CommandInfo(value="true", shell=True),
                        resources=common_pb2.Resources(cpus=0.01, mem=0.1),
                        simulation=common_pb2.SimulationInfo(duration_seconds=seconds),
                    )
                    for i in range(count)
                ]
                await self.stub.Accept(
                    scheduler_pb2.AcceptRequest(
                        caller=scheduler_pb2.Caller(
                            framework_id=self.framework_id, stream_id=self.stream_id
                        ),
                        offer_ids=[offer.id],
                        operations=[
                            scheduler_pb2.Operation(
                                launch=scheduler_pb2.LaunchOperation(tasks=infos)
                            )
                        ],
                        filters=scheduler_pb2.Filters(refuse_seconds=0),
                    ),
                    timeout=60,
                )
                launched += count
                if launched >= tasks:
                    break
        return launched

    async def close(self) -> None:
        if self.call is not None:
            self.call.cancel()
        await self.channel.close()


async def measure(tasks: int, seconds: float, master_args: tuple[str, ...]) -> None:
    """Start a master and a simulated agent, launch ``tasks`` tasks from a framework that then
    stops reading, and print the master's RSS every 5 s for ``seconds``."""
    import psutil

    from corral.frameworks.sdk.testing import LocalCluster

    async with LocalCluster(
        agents=1,
        agent_resources="cpus:1000;mem:100000;disk:1000",
        agent_args=("--simulate",),
        master_args=(*FLOOD_MASTER_ARGS, *master_args),
    ) as cluster:
        master = psutil.Process(cluster.processes["master"].pid)
        stalled = StalledFramework(cluster.master)
        await stalled.subscribe()
        before = master.memory_info().rss
        started = time.monotonic()
        await stalled.launch(tasks, id_length=40, seconds=1.0)
        print(f"master RSS before launching: {before / 2**20:.0f} MiB", flush=True)
        print("seconds since launch, master RSS MiB", flush=True)
        while (elapsed := time.monotonic() - started) < seconds:
            print(f"{elapsed:5.0f} {master.memory_info().rss / 2**20:8.0f}", flush=True)
            await asyncio.sleep(5)
        await stalled.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=measure.__doc__)
    parser.add_argument("--tasks", type=int, default=20_000)
    parser.add_argument("--seconds", type=float, default=90)
    parser.add_argument("master_args", nargs="*", help="extra master flags (after --)")
    args = parser.parse_args()
    asyncio.run(measure(args.tasks, args.seconds, tuple(args.master_args)))
