"""Issue 17: no message the master builds for a framework or an agent may pass
MAX_MESSAGE_BYTES, or the peer refuses it and loses its stream. The outbox merges commands per
destination, so it caps each merged message by (estimated) bytes as well as by count."""

from __future__ import annotations

import grpc
import pytest

from corral.limits import MAX_MESSAGE_BYTES
from corral.master import outbox
from corral.master.core import commands as cmd
from corral.master.core.types import Status, TaskState
from corral.master.outbox import Outbox, UpdateBatch
from corral.master.rpc import scheduler as rpc_scheduler
from corral.master.rpc.out_stream import OutStream
from corral.master.wire import convert
from corral.v1 import common_pb2, scheduler_pb2

MiB = 1 << 20


def status(i: int, message: str = "") -> Status:
    return Status(
        task_id=f"t{i}",
        framework_id="f",
        agent_id="a",
        state=TaskState.RUNNING,
        message=message,
        uuid=b"u" * 16,
    )


def framework_events(box: Outbox, framework_id: str = "f") -> list[scheduler_pb2.Event]:
    out = []
    for msg in box.framework_msgs[framework_id]:
        for wire, _size in box.wire(msg):
            out.append(scheduler_pb2.Event.FromString(wire) if isinstance(wire, bytes) else wire)
    return out


def test_statuses_of_20_mib_go_out_in_updates_each_under_the_message_limit() -> None:
    box = Outbox()
    box.add(
        [
            cmd.SendUpdates(
                stimulus_id="s",
                framework_id="f",
                statuses=tuple(status(i, "m" * MiB) for i in range(20)),
            )
        ]
    )
    events = framework_events(box)
    assert len(events) > 1
    assert all(e.ByteSize() <= MAX_MESSAGE_BYTES for e in events)
    assert [s.task_id for e in events for s in e.update.statuses] == [f"t{i}" for i in range(20)]


@pytest.fixture
def small_batches(monkeypatch: pytest.MonkeyPatch) -> int:
    """A small bound, so many batches form from small items; estimates must stay above the
    real sizes at any bound."""
    bound = 2000
    monkeypatch.setattr(outbox, "MAX_BATCH_BYTES", bound)
    return bound


def test_updates_launches_kills_and_acks_stay_under_the_bound(small_batches: int) -> None:
    box = Outbox()
    tasks = []
    for i in range(40):
        info = common_pb2.TaskInfo(
            task_id=f"task-{i}",
            name="n" * 100,
            command=common_pb2.CommandInfo(value="é" * 50, shell=True),
            resources=common_pb2.Resources(cpus=0.1, mem=1),
        )
        tasks.append(convert.task_spec_from_pb(info))
    for i in range(0, 40, 4):
        box.add(
            [
                cmd.SendUpdates(
                    stimulus_id="s",
                    framework_id="f",
                    statuses=tuple(status(j, "ü" * 30) for j in range(i, i + 4)),
                ),
                cmd.SendLaunch(
                    stimulus_id="s", agent_id="a", framework_id="f", tasks=tuple(tasks[i : i + 4])
                ),
            ]
        )
    box.add(
        [
            cmd.SendKill(stimulus_id="s", agent_id="a", framework_id="f", task_id=f"k{i}" * 10)
            for i in range(60)
        ]
    )
    box.add(
        [
            cmd.SendAgentAcks(
                stimulus_id="s",
                agent_id="a",
                acknowledgements=tuple(("F" * 40, f"t{i}", b"u" * 64) for i in range(60)),
            )
        ]
    )
    updates = framework_events(box)
    agent = box.agent_msgs["a"]
    kinds = [m.WhichOneof("message") for m in agent]
    assert kinds.count("launch_tasks") > 1 and kinds.count("kill_tasks") > 1
    assert kinds.count("acknowledgements") > 1 and len(updates) > 1
    for msg in [*updates, *agent]:
        # The payload (what the envelope's key and length wrap) stays under the bound.
        assert msg.ByteSize() <= small_batches + 8, msg.WhichOneof(
            "event" if isinstance(msg, scheduler_pb2.Event) else "message"
        )
    assert [s.task_id for e in updates for s in e.update.statuses] == [f"t{i}" for i in range(40)]
    launched = [
        t.task_id for m in agent if m.HasField("launch_tasks") for t in m.launch_tasks.tasks
    ]
    assert launched == [f"task-{i}" for i in range(40)]
    kills = [k.task_id for m in agent if m.HasField("kill_tasks") for k in m.kill_tasks.kills]
    assert kills == [f"k{i}" * 10 for i in range(60)]
    acks = [
        a.task_id
        for m in agent
        if m.HasField("acknowledgements")
        for a in m.acknowledgements.acknowledgements
    ]
    assert acks == [f"t{i}" for i in range(60)]


def test_the_estimate_of_an_update_is_at_least_its_size(small_batches: int) -> None:
    box = Outbox()
    box.add(
        [
            cmd.SendUpdates(
                stimulus_id="s",
                framework_id="f",
                statuses=(status(1, "x" * 100), status(2, "ß" * 40)),
            )
        ]
    )
    [batch] = box.framework_msgs["f"]
    assert isinstance(batch, UpdateBatch)
    assert batch.nbytes >= batch.event.update.ByteSize()


async def test_a_stream_merges_queued_updates_only_while_they_fit_the_bound() -> None:
    stream = OutStream()
    half = outbox.MAX_BATCH_BYTES // 2
    for i in range(5):
        event = scheduler_pb2.Event(update=scheduler_pb2.Update())
        event.update.statuses.add(task_id=f"t{i}")
        stream.put(event, size=half - 10)
    stream.end()
    out = [m async for m in stream.messages()]
    assert [[s.task_id for s in m.update.statuses] for m in out] == [
        ["t0", "t1"],
        ["t2", "t3"],
        ["t4"],
    ]


async def test_call_results_past_the_bound_go_out_in_several_batches(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(rpc_scheduler, "MAX_BATCH_BYTES", 1000)
    results = rpc_scheduler._CallResults()
    for i in range(30):
        results.add(i, grpc.StatusCode.INVALID_ARGUMENT, "r" * 100)
    results.done_reading()
    batches = []
    while (batch := await results.next_batch()) is not None:
        batches.append(batch)
    assert len(batches) > 1
    assert all(b.ByteSize() <= 1000 for b in batches)
    assert [r.id for b in batches for r in b.results] == list(range(30))
