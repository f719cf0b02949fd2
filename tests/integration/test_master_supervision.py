"""Issue 17: no background task of the master ends unnoticed. One event whose handler raises
is refused, logged and counted, and the loop (and every timer) goes on; a loop that dies stops
the master with exit status 1. A real master in this process; failures are injected."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
import structlog

from corral.frameworks.sdk import tls as sdk_tls
from corral.master import server
from corral.master.core import events as ev
from corral.master.core.config import MasterConfig
from corral.master.runtime import MasterRuntime
from corral.master.server import RunningMaster, serve_forever, start_master
from corral.v1 import scheduler_pb2 as s
from corral.v1 import scheduler_pb2_grpc
from tests.pki import TestPKI

TIMEOUT = 10.0


async def wait_for(predicate: Callable[[], bool], what: str, timeout: float = TIMEOUT) -> None:
    try:
        async with asyncio.timeout(timeout):
            while not predicate():
                await asyncio.sleep(0.01)
    except TimeoutError:
        raise AssertionError(f"timed out after {timeout:g} s waiting for {what}") from None


@pytest.fixture
def certs(tmp_path: Path) -> TestPKI:
    return TestPKI(tmp_path)


@pytest.fixture
async def master(certs: TestPKI) -> AsyncIterator[RunningMaster]:
    config = MasterConfig(allocation_interval=0.02, agent_timeout=0.2, agent_heartbeat_interval=0.1)
    running = await start_master(
        config, "127.0.0.1:0", "127.0.0.1:0", allocator="numpy", tls=certs.server
    )
    try:
        yield running
    finally:
        await running.stop()


def sample(runtime: MasterRuntime, name: str, **labels: str) -> float:
    value = runtime.metrics.registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


@pytest.mark.parametrize("kind", [ev.Tick, ev.AllocationTick])
async def test_a_timer_event_whose_handler_raises_is_logged_counted_and_the_timer_goes_on(
    master: RunningMaster, monkeypatch: pytest.MonkeyPatch, kind: type[ev.Event]
) -> None:
    core = master.runtime.core
    handle = core.handle
    seen = {"failed": 0, "after": 0}

    def failing_once(event: ev.Event) -> Any:
        if isinstance(event, kind):
            if not seen["failed"]:
                seen["failed"] = 1
                raise RuntimeError("injected handler bug")
            seen["after"] += 1
        return handle(event)

    with structlog.testing.capture_logs() as logs:
        monkeypatch.setattr(core, "handle", failing_once)
        await wait_for(lambda: seen["after"] >= 3, f"{kind.__name__}s handled after the failure")
    failures = [e for e in logs if e["event"] == "core_failed"]
    assert len(failures) == 1, logs
    assert failures[0]["event_kind"] == kind.__name__
    assert failures[0]["stimulus_id"], failures[0]
    assert "injected handler bug" in failures[0]["error"]
    assert failures[0]["log_level"] == "error"
    counted = sample(master.runtime, "corral_event_failures_total", event=kind.__name__)
    assert counted == 1
    assert not master.runtime.died.is_set()


async def test_a_call_whose_handler_raises_gets_internal_and_the_master_serves_on(
    master: RunningMaster, certs: TestPKI, monkeypatch: pytest.MonkeyPatch
) -> None:
    core = master.runtime.core
    handle = core.handle

    def failing(event: ev.Event) -> Any:
        if isinstance(event, ev.Suppress):
            raise RuntimeError("injected handler bug")
        return handle(event)

    monkeypatch.setattr(core, "handle", failing)
    async with sdk_tls.aio_channel(master.grpc_address, certs.operator) as channel:
        stub = scheduler_pb2_grpc.SchedulerStub(channel)  # type: ignore[no-untyped-call]
        caller = s.Caller(framework_id="f", stream_id="x")
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await stub.Suppress(s.SuppressRequest(caller=caller), timeout=TIMEOUT)
        assert info.value.code() == grpc.StatusCode.INTERNAL
        assert "injected handler bug" in (info.value.details() or "")
        # The next call is handled as usual.
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await stub.Revive(s.ReviveRequest(caller=caller), timeout=TIMEOUT)
        assert info.value.code() == grpc.StatusCode.NOT_FOUND
    assert sample(master.runtime, "corral_event_failures_total", event="Suppress") == 1


@pytest.mark.parametrize("loop", ["_tick_loop", "_heartbeat_loop", "_core_loop"])
async def test_a_runtime_loop_that_dies_is_logged_counted_and_stops_the_master(
    monkeypatch: pytest.MonkeyPatch, loop: str, tmp_path: Path
) -> None:
    async def dies(self: MasterRuntime) -> None:
        await asyncio.sleep(0)
        raise RuntimeError("injected loop bug")

    monkeypatch.setattr(MasterRuntime, loop, dies)
    with structlog.testing.capture_logs() as logs:
        master = await start_master(
            MasterConfig(), "127.0.0.1:0", "127.0.0.1:0", "numpy", tls=TestPKI(tmp_path).server
        )
        try:
            await wait_for(master.runtime.died.is_set, "the runtime to notice the dead loop")
        finally:
            await master.stop()
    name = {"_tick_loop": "master-tick", "_heartbeat_loop": "master-heartbeat"}.get(
        loop, "master-core"
    )
    assert name in master.runtime.death and "injected loop bug" in master.runtime.death
    [failure] = [e for e in logs if e["event"] == "background_task_failed"]
    assert failure["task"] == name and failure["log_level"] == "error"
    assert sample(master.runtime, "corral_background_task_failures_total", task=name) == 1


async def test_a_loop_that_returns_is_a_death_too(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    async def returns(self: MasterRuntime) -> None:
        await asyncio.sleep(0)

    monkeypatch.setattr(MasterRuntime, "_allocation_loop", returns)
    master = await start_master(
        MasterConfig(), "127.0.0.1:0", "127.0.0.1:0", "numpy", tls=TestPKI(tmp_path).server
    )
    try:
        await wait_for(master.runtime.died.is_set, "the runtime to notice the ended loop")
    finally:
        await master.stop()
    assert master.runtime.death == "master-allocation returned"


async def test_serve_forever_returns_1_when_a_loop_dies(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    async def dies(self: MasterRuntime) -> None:
        raise RuntimeError("injected loop bug")

    monkeypatch.setattr(MasterRuntime, "_tick_loop", dies)
    # serve_forever tunes and freezes the garbage collector for the whole process: not here.
    monkeypatch.setattr(server, "tune_gc", lambda thresholds: None)
    monkeypatch.setattr(server.gc, "freeze", lambda: None)
    code = await asyncio.wait_for(
        serve_forever(
            MasterConfig(),
            "127.0.0.1:0",
            "127.0.0.1:0",
            "numpy",
            None,
            tls=TestPKI(tmp_path).server,
        ),
        TIMEOUT,
    )
    assert code == 1
