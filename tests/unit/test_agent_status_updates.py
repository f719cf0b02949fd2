"""The status update manager: kept until acknowledged, resent per task in order with backoff."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st_

from corral.agent.core.status_updates import Backoff, StatusUpdateManager
from corral.agent.core.types import Status
from corral.agent.core.types import TaskState as S


def st(task_id: str, state: S, uuid: int) -> Status:
    return Status(task_id, "f", "a", state, uuid=uuid.to_bytes(16, "big"))


def u(n: int) -> bytes:
    return n.to_bytes(16, "big")


def test_backoff_doubles_and_caps() -> None:
    m = StatusUpdateManager(Backoff(initial=1.0, factor=2.0, maximum=5.0))
    m.add(st("t", S.RUNNING, 1), now=0.0)
    assert m.next_retry() == 1.0
    assert m.due(0.5) == []
    retries = []
    now = 0.0
    for _ in range(5):
        now = m.next_retry() or 0.0
        assert [s.uuid for s in m.due(now)] == [u(1)]
        retries.append(now)
    assert retries == [1.0, 3.0, 7.0, 12.0, 17.0]  # +1, +2, +4, then capped at +5


def test_retry_resends_all_of_a_task_in_order_and_ack_settles_older() -> None:
    m = StatusUpdateManager(Backoff(initial=1.0))
    m.add(st("t", S.STARTING, 1), now=0.0)
    m.add(st("t", S.RUNNING, 2), now=0.0)
    m.add(st("x", S.STARTING, 3), now=0.0)
    assert [s.uuid for s in m.due(1.0)] == [u(1), u(2), u(3)]
    acked = m.acknowledge(("f", "t"), u(2))
    assert acked is not None and acked.state is S.RUNNING
    assert m.pending("f", "t") == ()  # STARTING is settled by the newer RUNNING's ack
    assert len(m) == 1


def test_unknown_and_duplicate_acks_are_harmless() -> None:
    m = StatusUpdateManager()
    m.add(st("t", S.RUNNING, 1), now=0.0)
    assert m.acknowledge(("f", "nope"), u(1)) is None
    assert m.acknowledge(("f", "t"), u(9)) is None
    assert m.acknowledge(("f", "t"), u(1)) is not None
    assert m.acknowledge(("f", "t"), u(1)) is None
    assert m.next_retry() is None


def test_resend_all_restarts_backoff() -> None:
    m = StatusUpdateManager(Backoff(initial=1.0))
    m.add(st("t", S.RUNNING, 1), now=0.0)
    m.due(1.0)
    m.due(3.0)  # interval now 4
    assert m.next_retry() == 7.0
    assert [s.uuid for s in m.resend_all(4.0)] == [u(1)]
    assert m.next_retry() == 5.0


ops = st_.lists(
    st_.tuples(
        st_.sampled_from(["add", "ack", "ack_unknown", "due", "resend"]),
        st_.sampled_from(["t1", "t2", "t3", "t4"]),
        st_.floats(min_value=0.0, max_value=30.0),
    ),
    max_size=120,
)


@settings(max_examples=300, deadline=None)
@given(ops)
def test_next_retry_is_always_the_earliest_pending_retry(
    script: list[tuple[str, str, float]],
) -> None:
    """Whatever happens, ``next_retry`` equals a scan of every pending task's next retry (its
    heap drops dead entries lazily and is rebuilt when they pile up)."""
    m = StatusUpdateManager(Backoff(initial=1.0, factor=2.0, maximum=8.0))
    sent: dict[str, list[int]] = {}
    now, uuid = 0.0, 0
    for op, task_id, step in script:
        now += step
        if op == "add":
            uuid += 1
            m.add(st(task_id, S.RUNNING, uuid), now)
            sent.setdefault(task_id, []).append(uuid)
        elif op == "ack" and sent.get(task_id):
            m.acknowledge(("f", task_id), u(sent[task_id].pop(0)))
        elif op == "ack_unknown":
            m.acknowledge(("f", task_id), u(10_000))
        elif op == "due":
            m.due(now)
        elif op == "resend":
            m.resend_all(now)
        scan = [t.next_retry for t in m._tasks.values()]
        assert m.next_retry() == (min(scan) if scan else None)
