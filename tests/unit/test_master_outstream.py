"""OutStream: what a stream handler writes, in order; UPDATEs queued back to back merge."""

from __future__ import annotations

from corral.master.rpc.out_stream import OutStream
from corral.v1 import common_pb2, scheduler_pb2


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
