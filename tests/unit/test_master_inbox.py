"""master/inbox.py: agents' registrations wait in a lane of their own, so a framework's call and
the allocation timer's tick are not queued behind a whole cluster re-registering after a
failover; each lane stays first in, first out, and registrations are never starved."""

from __future__ import annotations

import asyncio
from typing import Any

from corral.acl import ANONYMOUS
from corral.master.allocator import make_allocator
from corral.master.core import events as ev
from corral.master.core.config import MasterConfig
from corral.master.core.durable import RegistryState
from corral.master.core.types import AgentSpec, FrameworkSpec
from corral.master.inbox import REGISTRATIONS_PER_TURN, Inbox
from corral.master.runtime import MasterRuntime
from corral.resources import parse_resources


def _names(batch: list[tuple[Any, Any]]) -> list[str]:
    return [item for item, _ in batch]


def test_calls_are_taken_before_the_registrations_queued_ahead_of_them() -> None:
    inbox = Inbox(registrations_per_turn=3)
    for i in range(10):
        inbox.put((f"register-{i}", None), registration=True)
    inbox.put(("subscribe", None))
    inbox.put(("tick", None))
    assert inbox.qsize() == 12
    first = _names(inbox.take_now(limit=100))
    assert first == ["subscribe", "tick", "register-0", "register-1", "register-2"]
    assert _names(inbox.take_now(limit=100)) == ["register-3", "register-4", "register-5"]
    assert inbox.registrations_waiting == 4


def test_a_full_calls_lane_does_not_starve_registrations_and_both_stay_in_order() -> None:
    inbox = Inbox(registrations_per_turn=2)
    for i in range(5):
        inbox.put((f"register-{i}", None), registration=True)
    for i in range(6):
        inbox.put((f"call-{i}", None))
    taken: list[str] = []
    while not inbox.empty():
        batch = _names(inbox.take_now(limit=4))
        # Every turn takes registrations while any wait, however many calls wait.
        assert any(name.startswith("register") for name in batch) or not inbox.registrations_waiting
        taken += batch
    assert [n for n in taken if n.startswith("call")] == [f"call-{i}" for i in range(6)]
    assert [n for n in taken if n.startswith("register")] == [f"register-{i}" for i in range(5)]
    assert inbox.take_now(limit=4) == []


async def test_take_waits_for_the_first_item_of_either_lane() -> None:
    inbox = Inbox()
    waiting = asyncio.create_task(inbox.take(limit=10))
    await asyncio.sleep(0)
    assert not waiting.done()
    inbox.put(("register", None), registration=True)
    assert _names(await asyncio.wait_for(waiting, 5)) == ["register"]
    again = asyncio.create_task(inbox.take(limit=10))
    await asyncio.sleep(0)
    assert not again.done(), "an emptied inbox must wait again"
    inbox.put(("call", None))
    assert _names(await asyncio.wait_for(again, 5)) == ["call"]


def _register(runtime: MasterRuntime, i: int) -> ev.AgentRegister:
    return ev.AgentRegister(
        stimulus_id=f"register-{i}",
        now=runtime.clock(),
        connection=runtime.new_connection(),
        spec=AgentSpec(
            agent_id="", hostname=f"host-{i}", resources=parse_resources("cpus:4;mem:4096")
        ),
        new_agent_id=f"A{i}",
        tasks=(),
        principal=ANONYMOUS,
    )


async def test_a_framework_subscribing_behind_a_registration_storm_is_answered_first() -> None:
    """The runtime's core loop: 600 registrations queued, then a framework's SUBSCRIBE. The
    framework is subscribed after at most one turn's registrations, not after all of them."""
    runtime = MasterRuntime(MasterConfig(), make_allocator("numpy"))
    runtime.start(RegistryState())
    n = 600
    # Queued in one go, before the core task runs: its first turn finds them all.
    registrations = [runtime.submit_call(_register(runtime, i)) for i in range(n)]
    subscribed = runtime.submit_call(
        ev.FrameworkSubscribe(
            stimulus_id="subscribe",
            now=runtime.clock(),
            connection=runtime.new_connection(),
            spec=FrameworkSpec(framework_id="", name="fw"),
            new_framework_id="F1",
            stream_id="stream-1",
            principal=ANONYMOUS,
        )
    )
    agents_when_subscribed: list[int] = []
    subscribed.add_done_callback(lambda _: agents_when_subscribed.append(len(runtime.core.agents)))
    try:
        await asyncio.wait_for(subscribed, 30)
        await asyncio.wait_for(asyncio.gather(*registrations), 60)
    finally:
        await runtime.stop()
    assert len(runtime.core.agents) == n
    assert agents_when_subscribed[0] <= REGISTRATIONS_PER_TURN, (
        f"the framework was subscribed only after {agents_when_subscribed[0]} of {n} registrations"
    )
