"""OutStream: what a stream handler writes, in order; UPDATEs queued back to back merge, and so
do an agent's acknowledgements, held a moment for more."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from corral.master.allocator import make_allocator
from corral.master.core.config import MAX_AGENT_ACK_HOLD, MasterConfig, agent_ack_hold
from corral.master.outbox import MAX_BATCH_BYTES
from corral.master.rpc.out_stream import OutStream
from corral.master.runtime import MasterRuntime
from corral.tasks import STATUS_RETRY_SECONDS
from corral.v1 import agent_pb2, common_pb2, scheduler_pb2


def update(*task_ids: str) -> scheduler_pb2.Event:
    return scheduler_pb2.Event(
        update=scheduler_pb2.Update(statuses=[common_pb2.TaskStatus(task_id=t) for t in task_ids])
    )


async def drain(stream: OutStream) -> list[object]:
    return [m async for m in stream.messages()]


async def test_updates_queued_back_to_back_go_out_as_one_in_order() -> None:
    stream = OutStream()
    offers = b"\x12\x00"  # an OFFERS event as wire bytes
    for msg in (update("a"), update("b", "c"), offers, update("d"), update("e")):
        stream.put(msg)
    stream.end()
    out = await drain(stream)
    assert len(out) == 3
    first, second, third = out
    assert isinstance(first, scheduler_pb2.Event)
    assert [s.task_id for s in first.update.statuses] == ["a", "b", "c"]
    assert second == offers
    assert isinstance(third, scheduler_pb2.Event)
    assert [s.task_id for s in third.update.statuses] == ["d", "e"]


async def test_a_stream_that_falls_behind_fails_and_stops() -> None:
    stream = OutStream(limit=2)
    stream.put(update("a"))
    stream.put(scheduler_pb2.Event(heartbeat=scheduler_pb2.Heartbeat()))
    stream.put(update("b"))  # over the limit
    assert stream.failed == "the stream fell too far behind"
    assert await drain(stream) == []


# -- an agent's acknowledgements: merged, and held a moment for more (``ack_hold``) ----------

HOUR = 3600.0  # a hold no test waits out: a message that comes out came out for another reason


def acks(*task_ids: str) -> agent_pb2.MasterMessage:
    return agent_pb2.MasterMessage(
        acknowledgements=agent_pb2.StatusAcknowledgements(
            acknowledgements=[
                agent_pb2.StatusAcknowledgement(framework_id="F", task_id=t, uuid=b"u")
                for t in task_ids
            ]
        )
    )


def launch(task_id: str) -> agent_pb2.MasterMessage:
    return agent_pb2.MasterMessage(
        launch_tasks=agent_pb2.LaunchTasks(
            framework_id="F", tasks=[common_pb2.TaskInfo(task_id=task_id)]
        )
    )


def acked(msg: object) -> list[str]:
    assert isinstance(msg, agent_pb2.MasterMessage)
    assert msg.HasField("acknowledgements"), msg
    return [a.task_id for a in msg.acknowledgements.acknowledgements]


async def next_within(messages: AsyncIterator[object], what: str) -> object:
    try:
        return await asyncio.wait_for(anext(messages), timeout=10.0)
    except TimeoutError:
        raise AssertionError(f"nothing written within 10 s: {what}") from None


async def test_acknowledgements_wait_for_more_while_nothing_else_is_queued() -> None:
    stream = OutStream(ack_hold=HOUR)
    messages = stream.messages()
    first = asyncio.ensure_future(anext(messages))
    stream.put(acks("a"), 40)
    for _ in range(20):  # the writer gets every chance to write it, and holds it
        await asyncio.sleep(0)
    assert not first.done()
    stream.put(acks("b", "c"), 80)
    for _ in range(20):
        await asyncio.sleep(0)
    assert not first.done()
    stream.end()  # an ending stream holds nothing back
    assert acked(await asyncio.wait_for(first, timeout=10.0)) == ["a", "b", "c"]
    assert [m async for m in messages] == []
    assert stream.queued_bytes == 0


async def test_anything_queued_behind_acknowledgements_sends_them_at_once_in_order() -> None:
    stream = OutStream(ack_hold=HOUR)
    messages = stream.messages()
    stream.put(acks("a"), 40)
    stream.put(acks("b"), 40)
    stream.put(launch("t2"), 100)
    stream.put(acks("c"), 40)
    assert acked(await next_within(messages, "acks ahead of a launch")) == ["a", "b"]
    second = await next_within(messages, "the launch")
    assert isinstance(second, agent_pb2.MasterMessage) and second.HasField("launch_tasks")
    # The last is held again: nothing behind it.
    third = asyncio.ensure_future(anext(messages))
    for _ in range(20):
        await asyncio.sleep(0)
    assert not third.done()
    stream.put(launch("t3"), 100)
    assert acked(await asyncio.wait_for(third, timeout=10.0)) == ["c"]
    fourth = await next_within(messages, "the second launch")
    assert isinstance(fourth, agent_pb2.MasterMessage) and fourth.HasField("launch_tasks")


async def test_held_acknowledgements_go_out_when_the_hold_is_over() -> None:
    stream = OutStream(ack_hold=0.05)
    messages = stream.messages()
    stream.put(acks("a"), 40)
    assert acked(await next_within(messages, "a lone acknowledgement after its hold")) == ["a"]
    stream.put(acks("b"), 40)  # a new hold starts with the next
    assert acked(await next_within(messages, "the next one after its own hold")) == ["b"]


async def test_acknowledgements_woken_for_during_their_hold_still_go_out_when_it_is_over() -> None:
    stream = OutStream(ack_hold=0.2)
    messages = stream.messages()
    first = asyncio.ensure_future(anext(messages))
    for task in "abcde":  # each wakes the writer, which merges it and waits again
        stream.put(acks(task), 40)
        await asyncio.sleep(0)
    # However the machine's speed split them between holds, all go out, in order, unprompted.
    out = acked(await asyncio.wait_for(first, timeout=10.0))
    while len(out) < 5:
        out += acked(await next_within(messages, f"the rest after {out}"))
    assert out == list("abcde")


async def test_merged_acknowledgements_stay_under_the_message_size_limit() -> None:
    stream = OutStream(ack_hold=HOUR)
    half = MAX_BATCH_BYTES // 2 + 1  # two of them do not fit one message
    stream.put(acks("a"), half)
    stream.put(acks("b"), half)
    stream.put(acks("c"), 10)
    stream.end()
    out = [acked(m) for m in await drain(stream)]
    assert out == [["a"], ["b", "c"]]


async def test_without_a_hold_acknowledgements_go_out_as_queued() -> None:
    stream = OutStream()
    messages = stream.messages()
    stream.put(acks("a"), 40)
    assert acked(await next_within(messages, "an acknowledgement, no hold")) == ["a"]
    stream.put(acks("b"), 40)
    stream.put(acks("c"), 40)
    stream.end()
    assert [acked(m) async for m in messages] == [["b"], ["c"]]


def test_the_runtime_holds_acknowledgements_on_agent_streams_only() -> None:
    runtime = MasterRuntime(MasterConfig(agent_ack_hold=1.5), make_allocator("numpy"))
    assert runtime.new_stream("agent").ack_hold == 1.5
    assert runtime.new_stream("framework").ack_hold == 0.0
    assert MasterRuntime(MasterConfig(), make_allocator("numpy")).new_stream("agent").ack_hold == (
        MasterConfig().agent_ack_hold
    )


def test_an_agent_that_resends_sooner_has_its_acknowledgements_held_for_half_its_wait() -> None:
    """An agent resends a status not acknowledged within its REGISTER's status_retry: a hold
    longer than that would have it resend what the master merely held."""
    runtime = MasterRuntime(MasterConfig(agent_ack_hold=2.0), make_allocator("numpy"))
    assert runtime.new_stream("agent", status_retry=1.0).ack_hold == 0.5
    assert runtime.new_stream("agent", status_retry=60.0).ack_hold == 2.0  # the configured
    assert runtime.new_stream("agent", status_retry=0.0).ack_hold == 2.0  # unsaid: 10 s
    assert runtime.new_stream("framework", status_retry=1.0).ack_hold == 0.0
    assert agent_ack_hold(5.0, 0.0) == MAX_AGENT_ACK_HOLD == STATUS_RETRY_SECONDS / 2
    assert agent_ack_hold(0.0, 0.2) == 0.0  # off stays off


async def test_heartbeats_go_only_to_streams_whose_subscription_was_answered() -> None:
    """A framework's first event is SUBSCRIBED: a stream registered while the core still
    handles its SUBSCRIBE (a loaded master) gets no heartbeat ahead of it."""
    runtime = MasterRuntime(
        MasterConfig(framework_heartbeat_interval=0.01), make_allocator("numpy")
    )
    waiting, answered = runtime.new_stream("framework"), runtime.new_stream("framework")
    runtime.framework_streams["waiting"] = waiting
    runtime.framework_streams["answered"] = answered
    runtime._framework_of_stream["answered"] = "F1"
    beats = asyncio.ensure_future(runtime._heartbeat_loop())
    try:
        first = await next_within(answered.messages(), "a heartbeat to the subscribed stream")
    finally:
        beats.cancel()
    assert isinstance(first, scheduler_pb2.Event) and first.HasField("heartbeat")
    assert not waiting.backlogged(), "a stream not yet answered SUBSCRIBED got a heartbeat"
