"""The fuzz driver's plumbing: an event loop in a thread for hypothesis's synchronous
examples, and raw framework and agent streams driven by hand with the generated stubs (nothing
validated before the master sees it). The calls made on them are fuzz_master.py's."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

import grpc

from corral.v1 import common_pb2 as pb
from corral.v1 import scheduler_pb2 as s

T = TypeVar("T")


class LoopThread:
    """An event loop in a daemon thread; ``run`` submits a coroutine and waits for it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="fuzz-loop", daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(timeout)
        except TimeoutError:
            future.cancel()
            raise AssertionError(f"no result within {timeout:g} s from {coro!r}") from None

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


# ----------------------------------------------------------------------------- raw clients


class RawStream:
    """What a raw framework and a raw agent share: a stream read until it ends (``take`` sees
    each message), then no longer alive; ``close`` cancels the call and the reader."""

    call: Any
    reader: asyncio.Task[None] | None
    alive: bool

    def take(self, msg: Any) -> None:
        raise NotImplementedError

    async def read(self) -> None:
        try:
            while (msg := await self.call.read()) is not grpc.aio.EOF:
                self.take(msg)
        except (grpc.aio.AioRpcError, asyncio.CancelledError):
            pass
        finally:
            self.alive = False

    def close(self) -> None:
        self.alive = False
        if self.call is not None:
            self.call.cancel()
        if self.reader is not None:
            self.reader.cancel()


@dataclass
class RawFramework(RawStream):
    name: str
    failover_timeout: float
    call: Any = None  # the Subscribe stream
    caller: s.Caller = field(default_factory=s.Caller)
    offers: dict[str, pb.Offer] = field(default_factory=dict)  # as last heard, maybe stale
    acks: list[s.Acknowledgement] = field(default_factory=list)  # statuses to acknowledge
    tasks: list[tuple[str, str]] = field(default_factory=list)  # (agent_id, task_id) launched
    reader: asyncio.Task[None] | None = None
    alive: bool = True

    def take(self, event: Any) -> None:
        kind = event.WhichOneof("event")
        if kind == "offers":
            self.offers.update((o.id, o) for o in event.offers.offers)
        elif kind == "rescind":
            for oid in event.rescind.offer_ids:
                self.offers.pop(oid, None)
        elif kind == "update":
            for st in event.update.statuses:
                if st.uuid:
                    self.acks.append(
                        s.Acknowledgement(agent_id=st.agent_id, task_id=st.task_id, uuid=st.uuid)
                    )
            del self.acks[:-200]


@dataclass
class RawAgent(RawStream):
    """A hand-driven AgentService.Connect stream."""

    call: Any
    agent_id: str = ""
    secret: str = ""
    tasks: list[pb.TaskInfo] = field(default_factory=list)  # launched here, as the master said
    reader: asyncio.Task[None] | None = None
    alive: bool = True

    def take(self, msg: Any) -> None:
        if msg.HasField("launch_tasks"):
            self.tasks.extend(msg.launch_tasks.tasks)
            del self.tasks[:-100]


def identity(b: bytes) -> bytes:
    return b


def task(task_id: str, cpus: float = 0.01, mem: float = 1.0, **extra: Any) -> pb.TaskInfo:
    ports = extra.pop("ports", ())
    return pb.TaskInfo(
        task_id=task_id,
        name="fuzz",
        command=pb.CommandInfo(value="true", shell=True),
        resources=pb.Resources(cpus=cpus, mem=mem, ports=[pb.Range(begin=p, end=p) for p in ports]),
        simulation=pb.SimulationInfo(duration_seconds=0.3),
        **extra,
    )
