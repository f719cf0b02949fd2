"""A slow peer cannot grow the master: each stream's queue is bounded by estimated bytes as well
as by messages, and pending statuses are not queued again while earlier ones wait unsent."""

from __future__ import annotations

import pytest

from corral.master import outbox
from corral.master.core import commands as cmd
from corral.master.core import events as ev
from corral.master.core.config import MIN_STREAM_QUEUE_BYTES, MasterConfig
from corral.master.core.statuses import RESEND_BATCH
from corral.master.core.types import TaskState
from corral.master.outbox import Outbox
from corral.master.rpc.out_stream import OutStream, StreamStats
from corral.master.wire import convert
from corral.v1 import common_pb2, scheduler_pb2
from tests.unit.core_harness import Harness, of, status, task


def update(task_id: str) -> scheduler_pb2.Event:
    return scheduler_pb2.Event(
        update=scheduler_pb2.Update(statuses=[common_pb2.TaskStatus(task_id=task_id)])
    )


async def test_a_stream_over_its_bytes_fails_once_drops_its_queue_and_says_why() -> None:
    cuts: list[str] = []
    stream = OutStream(max_bytes=1000, on_fail=cuts.append)
    stream.put(update("a"), 400)
    stream.put(b"\x12\x00", 500)  # offers, as wire bytes
    assert stream.queued_bytes == 900 and stream.backlogged()
    stream.put(update("b"), 200)  # 1100 > 1000
    assert stream.failed.startswith("the stream fell too far behind: 1100 bytes queued")
    assert cuts == [stream.failed]
    assert stream.queued_bytes == 0 and not stream.backlogged()  # its memory goes at once
    stream.put(update("c"), 10)
    assert cuts == [stream.failed]  # told once
    assert [m async for m in stream.messages()] == []
    assert stream.peak_bytes == 900


async def test_written_messages_leave_the_bytes_count() -> None:
    stream = OutStream(max_bytes=1000)
    for name in "abc":
        stream.put(update(name), 300)  # merged into one UPDATE as they are written
    stream.put(b"\x12\x00", 100)
    stream.end()
    out = [m async for m in stream.messages()]
    assert len(out) == 2 and stream.queued_bytes == 0
    stream2 = OutStream(max_bytes=1000)
    for name in "abc":
        stream2.put(update(name), 300)
    stream2.put(b"\x12\x00", 100)  # 1000: fits exactly, as the first three went out
    assert not stream2.failed


async def test_a_kinds_stats_hold_the_streams_with_bytes_queued_and_the_most_ever_held() -> None:
    # What the queue gauges read without walking every stream (out_stream.StreamStats).
    stats = StreamStats()
    busy, idle, cut = (OutStream(max_bytes=1000, stats=stats) for _ in range(3))
    idle.put(b"\x12\x00")  # a message put with no size is small: it holds no bytes
    for name in "ab":
        busy.put(update(name), 300)
    cut.put(update("c"), 700)
    assert stats.holding == {busy, cut} and stats.peak == 700
    cut.put(update("d"), 400)  # over its bound: failed, it holds nothing
    assert stats.holding == {busy} and stats.peak == 700
    busy.put(update("e"), 300)
    assert stats.peak == 900
    busy.end()
    assert len([m async for m in busy.messages()]) == 1  # the three UPDATEs merged
    assert stats.holding == set() and stats.peak == 900
    idle.drop()
    assert stats.holding == set()


def test_every_agent_message_has_a_size_estimate_at_least_its_size() -> None:
    box = Outbox()
    infos = [
        common_pb2.TaskInfo(
            task_id=f"task-{i}",
            name="n" * 50,
            command=common_pb2.CommandInfo(value="sleep 1", shell=True),
            resources=common_pb2.Resources(cpus=0.1, mem=1),
        )
        for i in range(10)
    ]
    tasks = tuple(convert.task_spec_from_pb(info) for info in infos)
    box.add(
        [
            cmd.SendLaunch(stimulus_id="s", agent_id="a", framework_id="f", tasks=tasks),
            cmd.SendHeartbeatInterval(stimulus_id="s", agent_id="a", heartbeat_interval=5),
            *(
                cmd.SendKill(stimulus_id="s", agent_id="a", framework_id="f", task_id=f"t{i}")
                for i in range(5)
            ),
            cmd.SendAgentAcks(
                stimulus_id="s",
                agent_id="a",
                acknowledgements=tuple(("F" * 40, f"t{i}", b"u" * 16) for i in range(5)),
            ),
            cmd.SendLaunch(stimulus_id="s", agent_id="a", framework_id="f", tasks=tasks[:2]),
        ]
    )
    msgs, sizes = box.agent_msgs["a"], box.agent_sizes["a"]
    assert len(msgs) == len(sizes) == 5
    for msg, size in zip(msgs, sizes, strict=True):
        assert size >= msg.ByteSize(), msg.WhichOneof("message")


def test_pending_statuses_are_not_resent_while_the_stream_is_backlogged() -> None:
    h = Harness(MasterConfig(status_retry_interval=5, agent_timeout=10**6))
    aid, _ = h.add_agent()
    fid, _ = h.subscribe()
    [offer] = h.offers_for(fid)
    h.accept(fid, [offer.offer_id], task("t1"))
    h.agent_updates(aid, status("t1", fid, aid, TaskState.RUNNING, uuid=b"u1"))
    h.now += 6
    # What was sent 6 s ago is still queued unsent: sending it again would only grow the queue.
    out = h.handle(ev.Tick(**h.base(), backlogged=frozenset({fid})))
    assert of(cmd.SendUpdates, out) == []
    h.now += 1
    [resent] = of(cmd.SendUpdates, h.handle(ev.Tick(**h.base())))  # the queue drained
    assert [s.uuid for s in resent.statuses] == [b"u1"]


def test_a_resubscribed_framework_gets_its_pending_statuses_one_update_at_a_time() -> None:
    n = RESEND_BATCH + 1000
    # More pending statuses than one UPDATE holds, from one agent: past the admission bound on
    # launches per agent (what is under test is how pending statuses are resent).
    h = Harness(MasterConfig(status_retry_interval=5, agent_timeout=10**6, max_agent_launches=n))
    aid, _ = h.add_agent(resources="cpus:100;mem:100000")
    fid, _ = h.subscribe()
    [offer] = h.offers_for(fid)
    tasks = [task(f"t{i}", "cpus:0.01;mem:1") for i in range(n)]
    h.accept(fid, [offer.offer_id], *tasks)
    h.agent_updates(
        aid,
        *(status(t.task_id, fid, aid, TaskState.RUNNING, uuid=t.task_id.encode()) for t in tasks),
    )
    h.handle(ev.FrameworkStreamClosed(**h.base(), framework_id=fid, stream_id=h.streams[fid]))
    _, out = h.subscribe(framework_id=fid)
    [first] = of(cmd.SendUpdates, out)
    assert [s.task_id for s in first.statuses] == [f"t{i}" for i in range(RESEND_BATCH)]
    # The rest once the stream drained, not while it is backlogged.
    assert of(cmd.SendUpdates, h.handle(ev.Tick(**h.base(), backlogged=frozenset({fid})))) == []
    [rest] = of(cmd.SendUpdates, h.tick())
    assert [s.task_id for s in rest.statuses] == [f"t{i}" for i in range(RESEND_BATCH, n)]
    assert of(cmd.SendUpdates, h.tick()) == []  # the others were sent just now


def test_a_stream_bound_below_one_message_is_refused() -> None:
    assert MIN_STREAM_QUEUE_BYTES == outbox.MAX_BATCH_BYTES  # the core's copy of the shell's
    with pytest.raises(ValueError, match="stream_queue_bytes"):
        MasterConfig(stream_queue_bytes=MIN_STREAM_QUEUE_BYTES - 1)
