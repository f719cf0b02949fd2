"""A master reads its registry in a worker thread: the event loop goes on while a large registry
is read (a standby taking over still answers its callers), and the read's time is a metric."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

from corral.master.allocator import make_allocator
from corral.master.core.config import MasterConfig
from corral.master.core.durable import Change, PutWeight, RegistryState
from corral.master.registry import MemoryRegistry
from corral.master.runtime import MasterRuntime


class HeldRegistry(MemoryRegistry):
    """A registry whose read lasts until the test lets it end."""

    def __init__(self) -> None:
        super().__init__()
        self.reading = threading.Event()
        self.release = threading.Event()
        self.reader = 0

    def load(self) -> RegistryState:
        self.reader = threading.get_ident()
        self.reading.set()
        assert self.release.wait(10), "the read was never let go: did the event loop stop?"
        return super().load()


async def test_the_registry_is_read_off_the_event_loop_and_timed() -> None:
    registry = HeldRegistry()
    registry.apply([PutWeight("web", 2.0)])
    runtime = MasterRuntime(MasterConfig(), make_allocator("numpy"), registry=registry)
    read = asyncio.create_task(runtime.read_registry())
    # The loop runs while the read waits: it is this coroutine that lets the read end.
    assert await asyncio.to_thread(registry.reading.wait, 10), "the registry was never read"
    assert not read.done()
    registry.release.set()
    state = await asyncio.wait_for(read, 10)
    assert state.weights == (("web", 2.0),)
    assert registry.reader != threading.get_ident()
    seconds = runtime.metrics.registry.get_sample_value("corral_registry_read_seconds")
    assert seconds is not None and seconds > 0


class WriterNoted(MemoryRegistry):
    """A registry in memory that notes the thread each write ran on."""

    def __init__(self, blocking: bool) -> None:
        super().__init__()
        self.blocking = blocking
        self.writers: list[int] = []

    def apply(self, changes: Sequence[Change]) -> None:
        self.writers.append(threading.get_ident())
        super().apply(changes)


async def test_a_registry_in_memory_is_written_on_the_loop_and_one_that_blocks_off_it() -> None:
    """A loop turn's writes to a registry in memory need no worker thread (the hand-off cost
    more than the writes); a registry that waits on a disk or a network still gets one."""
    for blocking in (False, True):
        registry = WriterNoted(blocking)
        runtime = MasterRuntime(MasterConfig(), make_allocator("numpy"), registry=registry)
        await runtime._persist([PutWeight("web", 2.0)])
        assert registry.weights == {"web": 2.0}
        on_loop = registry.writers == [threading.get_ident()]
        assert on_loop is not blocking, f"blocking={blocking}: written on {registry.writers}"
