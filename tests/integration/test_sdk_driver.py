"""The Driver against FakeMaster: a real grpc.aio Scheduler service on 127.0.0.1 that plays the
master, so every assertion is about what the SDK puts on the wire and when."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import grpc
import pytest
import structlog.testing

from corral.frameworks import sdk
from corral.frameworks.sdk.testing import FakeMaster
from corral.v1.common_pb2 import Offer, Resources, TaskState, TaskStatus

TIMEOUT = 5.0


async def until(predicate: Callable[[], bool], what: str, timeout: float = TIMEOUT) -> None:
    """Wait for a condition the test cannot subscribe to; fail with ``what`` after timeout."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        await asyncio.sleep(0.01)


class Recorder(sdk.Scheduler):
    """Records every callback as (name, argument) in order; never declines on its own."""

    def __init__(self) -> None:
        self.log: list[tuple[str, object]] = []
        self.release = asyncio.Event()
        self.release.set()

    def names(self) -> list[str]:
        return [name for name, _ in self.log]

    async def subscribed(self, driver: sdk.Driver, framework_id: str) -> None:
        self.log.append(("subscribed", framework_id))

    async def offers(self, driver: sdk.Driver, offers: list[Offer]) -> None:
        self.log.append(("offers", [o.id for o in offers]))

    async def rescinded(self, driver: sdk.Driver, offer_ids: object) -> None:
        self.log.append(("rescinded", list(offer_ids)))  # type: ignore[call-overload]

    async def status(self, driver: sdk.Driver, status: TaskStatus) -> None:
        await self.release.wait()
        self.log.append(("status", status.task_id))

    async def error(self, driver: sdk.Driver, message: str) -> None:
        self.log.append(("error", message))

    async def disconnected(self, driver: sdk.Driver) -> None:
        self.log.append(("disconnected", None))


def offer(offer_id: str, agent_id: str = "agent-1", cpus: float = 1, mem: float = 256) -> Offer:
    return Offer(
        id=offer_id, agent_id=agent_id, hostname="h", resources=Resources(cpus=cpus, mem=mem)
    )


def status(
    task_id: str, uuid: bytes = b"", state: int = TaskState.TASK_STATE_RUNNING
) -> TaskStatus:
    return TaskStatus(task_id=task_id, agent_id="agent-1", state=state, uuid=uuid)  # type: ignore[arg-type]


@pytest.fixture
async def master() -> AsyncIterator[FakeMaster]:
    async with FakeMaster() as m:
        yield m


def driver_for(master: FakeMaster, scheduler: sdk.Scheduler, **kw: object) -> sdk.Driver:
    kw.setdefault("connect_timeout", TIMEOUT)
    kw.setdefault("backoff", sdk.Backoff(initial=0.02, maximum=0.1))
    kw.setdefault("tls", master.tls)
    return sdk.Driver(scheduler, sdk.FrameworkInfo(name="t", role="*"), master.address, **kw)  # type: ignore[arg-type]


async def test_subscribes_and_dispatches_events_in_order(master: FakeMaster) -> None:
    rec = Recorder()
    async with driver_for(master, rec) as driver:
        assert driver.framework_id == "framework-1"
        await master.send_offers([offer("o1"), offer("o2")])
        await master.send_rescind(["o1"])
        await master.send_update([status("t1")])
        await until(lambda: len(rec.log) == 4, "four callbacks")
        await driver.stop()
        await driver.wait()
    assert rec.log == [
        ("subscribed", "framework-1"),
        ("offers", ["o1", "o2"]),
        ("rescinded", ["o1"]),
        ("status", "t1"),
    ]
    assert master.subscriptions[0].framework_info.name == "t"
    assert master.subscriptions[0].framework_info.id == ""


async def test_acks_each_update_in_one_batch_after_the_callbacks(master: FakeMaster) -> None:
    seen_acks: list[int] = []

    class Watcher(sdk.Scheduler):
        async def status(self, driver: sdk.Driver, status: TaskStatus) -> None:
            seen_acks.append(len(master.calls_of("Acknowledge")))

    async with driver_for(master, Watcher()) as driver:
        await master.send_update([status("a", b"u-a"), status("b"), status("c", b"u-c")])
        await master.wait_for_calls("Acknowledge", 1)
        await master.send_update([status("d", b"u-d")])
        acks = await master.wait_for_calls("Acknowledge", 2)
        stream_id = driver.stream_id
        await driver.stop()
    # Each callback ran before its batch was acknowledged; "b" had no uuid, so no ack.
    assert seen_acks == [0, 0, 0, 1]
    assert [(a.task_id, a.agent_id, a.uuid) for a in acks[0].acknowledgements] == [
        ("a", "agent-1", b"u-a"),
        ("c", "agent-1", b"u-c"),
    ]
    assert [a.task_id for a in acks[1].acknowledgements] == ["d"]
    assert acks[0].caller.framework_id == "framework-1"
    assert stream_id
    assert acks[0].caller.stream_id == stream_id


async def test_a_status_sent_again_before_its_ack_left_is_acknowledged_once(
    master: FakeMaster,
) -> None:
    """The master sends an unacknowledged status again after a while; when the copy arrives
    before the first one's acknowledgement left, both are in one batch. The master refuses a
    call that names one acknowledgement twice (and would send every status in it again), so the
    driver sends each (task, uuid) once: the callback sees both, the master one."""
    rec = Recorder()
    rec.release.clear()  # hold the callbacks until both copies are in the driver's hands
    async with driver_for(master, rec) as driver:
        await master.send_update([status("a", b"u-a"), status("a", b"u-a"), status("b", b"u-b")])
        await master.send_update([status("a", b"u-a")])
        rec.release.set()
        await until(lambda: rec.names().count("status") == 4, "the four status callbacks")
        await master.wait_for_calls("Acknowledge", 1)
        await driver.stop()
    acks = master.calls_of("Acknowledge")
    sent = [
        (a.task_id, a.uuid)
        for call in master.calls_of("Acknowledge")
        for a in call.acknowledgements
    ]
    assert sorted(set(sent)) == [("a", b"u-a"), ("b", b"u-b")]
    for call in acks:  # no call names one twice
        pairs = [(a.task_id, a.uuid) for a in call.acknowledgements]
        assert len(pairs) == len(set(pairs)), pairs


async def test_acknowledgements_are_quiet_calls_that_only_a_refusal_answers(
    master: FakeMaster,
) -> None:
    async with driver_for(master, Recorder()) as driver:
        await driver.suppress()
        await master.send_update([status("a", b"u-a")])
        await master.wait_for_calls("Acknowledge")
        await driver.revive()  # answered after the acknowledgement, which came first
        await driver.stop()
    assert [(c.method, c.quiet) for c in master.calls] == [
        ("Suppress", False),
        ("Acknowledge", True),
        ("Revive", False),
    ]
    assert master.call_results == 2  # Suppress and Revive; the acknowledgement's success: none


async def test_a_failing_status_callback_is_not_acknowledged_and_ends_wait(
    master: FakeMaster,
) -> None:
    class Boom(sdk.Scheduler):
        async def status(self, driver: sdk.Driver, status: TaskStatus) -> None:
            if status.task_id == "bad":
                raise RuntimeError("framework bug")

    async with driver_for(master, Boom()) as driver:
        await master.send_update([status("good", b"u1"), status("bad", b"u2")])
        with pytest.raises(RuntimeError, match="framework bug"):
            await asyncio.wait_for(driver.wait(), TIMEOUT)
    (ack,) = master.calls_of("Acknowledge")
    assert [a.task_id for a in ack.acknowledgements] == ["good"]


async def test_stop_inside_a_callback_still_acknowledges_that_status(master: FakeMaster) -> None:
    class StopOnFinish(sdk.Scheduler):
        async def status(self, driver: sdk.Driver, status: TaskStatus) -> None:
            if sdk.is_terminal(status.state):
                await driver.stop()

    async with driver_for(master, StopOnFinish()) as driver:
        await master.send_update([status("t", b"u", TaskState.TASK_STATE_FINISHED)])
        await asyncio.wait_for(driver.wait(), TIMEOUT)
    (ack,) = master.calls_of("Acknowledge")
    assert ack.acknowledgements[0].uuid == b"u"


async def test_calls_carry_the_caller_and_their_arguments(master: FakeMaster) -> None:
    async with driver_for(master, Recorder()) as driver:
        caller = (driver.framework_id, driver.stream_id)
        t = sdk.task("web", "sleep 1", cpus=0.5, mem=64)
        await driver.launch([offer("o1", agent_id="agent-7")], [t], refuse_seconds=2)
        await driver.decline(["o2", offer("o3")], refuse_seconds=0)
        await driver.decline([])  # nothing to decline: no call
        await driver.launch([offer("o4")], [])  # nothing to launch: a decline
        await driver.suppress()
        await driver.revive()
        await driver.kill("web-1", "agent-7", grace=3)
        await driver.reconcile([("web-1", "agent-7")])
        await driver.reconcile()
        await driver.teardown()
        await asyncio.wait_for(driver.wait(), TIMEOUT)

    methods = [c.method for c in master.calls]
    assert methods == [
        "Accept",
        "Decline",
        "Decline",
        "Suppress",
        "Revive",
        "Kill",
        "Reconcile",
        "Reconcile",
        "Teardown",
    ]
    for call in master.calls:
        assert (call.request.caller.framework_id, call.request.caller.stream_id) == caller
    accept = master.calls[0].request
    assert list(accept.offer_ids) == ["o1"]
    assert accept.filters.refuse_seconds == 2
    (launched,) = accept.operations[0].launch.tasks
    assert launched.task_id == t.task_id
    assert launched.agent_id == "agent-7"  # filled in from the offer...
    assert t.agent_id == ""  # ...on a copy
    first_decline, second_decline = master.calls[1].request, master.calls[2].request
    assert list(first_decline.offer_ids) == ["o2", "o3"]
    assert first_decline.filters.HasField("refuse_seconds")
    assert first_decline.filters.refuse_seconds == 0
    assert list(second_decline.offer_ids) == ["o4"]
    assert not second_decline.filters.HasField("refuse_seconds")  # the master's default
    kill = master.calls[5].request
    assert (kill.task_id, kill.agent_id, kill.kill_grace_period_seconds) == ("web-1", "agent-7", 3)
    assert [(r.task_id, r.agent_id) for r in master.calls[6].request.tasks] == [
        ("web-1", "agent-7")
    ]
    assert list(master.calls[7].request.tasks) == []


async def test_a_refused_call_raises_call_error_with_code_and_reason(master: FakeMaster) -> None:
    master.refuse("Accept", grpc.StatusCode.INVALID_ARGUMENT, "task web-1: cpus 8 exceed offer 1")
    async with driver_for(master, Recorder()) as driver:
        with pytest.raises(sdk.CallError) as caught:
            await driver.launch([offer("o1")], [sdk.task("web", "true", cpus=8, mem=1)])
        # The driver is still usable after a refusal.
        await driver.suppress()
        await driver.stop()
    assert caught.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert caught.value.message == "task web-1: cpus 8 exceed offer 1"
    assert caught.value.method == "Accept"
    assert "INVALID_ARGUMENT" in str(caught.value)
    assert [c.method for c in master.calls] == ["Accept", "Suppress"]


async def test_a_quiet_launch_is_answered_only_if_refused_and_its_tasks_count_as_live(
    master: FakeMaster,
) -> None:
    refusals: list[sdk.CallError] = []
    master.refuse("Accept", grpc.StatusCode.NOT_FOUND, "offer o2 is not outstanding")
    async with driver_for(master, Recorder()) as driver:
        # The first accept is refused (as an accept of a rescinded offer is), the second not:
        # launch returns for both once written, and only the refusal is answered and told.
        await driver.launch(
            [offer("o2")], [sdk.task("gone", "true", 0.1, 32)], on_refused=refusals.append
        )
        await driver.launch(
            [offer("o1")], [sdk.task("kept", "true", 0.1, 32)], on_refused=refusals.append
        )
        await until(lambda: len(refusals) == 1, "the refusal told to on_refused")
        accepts = master.calls_of("Accept")
        assert [c.quiet for c in master.calls if c.method == "Accept"] == [True, True]
        assert master.call_results == 1  # the refusal; the quiet success is not answered
        (err,) = refusals
        assert (err.method, err.code, err.message) == (
            "Accept",
            grpc.StatusCode.NOT_FOUND,
            "offer o2 is not outstanding",
        )
        # A reconnection asks about the launched task, not about the refused one.
        await master.restart()
        (reconcile,) = await master.wait_for_calls("Reconcile")
        await driver.stop()
    launched = [t.task_id for acc in accepts for t in acc.operations[0].launch.tasks]
    assert [t.task_id for t in reconcile.tasks] == [launched[1]]


async def test_an_on_refused_callback_that_raises_is_logged_and_the_driver_goes_on(
    master: FakeMaster,
) -> None:
    told: list[sdk.CallError] = []

    def broken(err: sdk.CallError) -> None:
        told.append(err)
        raise RuntimeError("the framework's bug")

    master.refuse("Accept", grpc.StatusCode.NOT_FOUND, "offer o1 is not outstanding")
    with structlog.testing.capture_logs() as logs:
        async with driver_for(master, Recorder()) as driver:
            await driver.launch([offer("o1")], [sdk.task("a", "true", 0.1, 32)], on_refused=broken)
            await until(lambda: bool(told), "the refusal told to the callback")
            await driver.suppress()  # a loud call on the same stream still gets its answer
            await driver.stop()
    assert [c.method for c in master.calls] == ["Accept", "Suppress"]
    assert any(entry["event"] == "on_refused raised" for entry in logs)


async def test_default_scheduler_declines_every_offer(master: FakeMaster) -> None:
    async with driver_for(master, sdk.Scheduler()) as driver:
        await master.send_offers([offer("o1"), offer("o2", agent_id="agent-2")])
        (decline,) = await master.wait_for_calls("Decline")
        await driver.stop()
    assert list(decline.offer_ids) == ["o1", "o2"]


async def test_set_demands_sends_the_demands_and_demand_bad_input_fails_at_once(
    master: FakeMaster,
) -> None:
    async with driver_for(master, sdk.Scheduler()) as driver:
        await driver.set_demands(
            [sdk.Demand("web", 3, cpus=1, mem=256, priority_class="serving", min_member=2)]
        )
        await driver.set_demands([])
        await driver.stop()
    first, withdrawn = master.calls_of("SetDemands")
    (web,) = first.demands
    assert (web.name, web.count, web.priority_class, web.min_member) == ("web", 3, "serving", 2)
    assert (web.resources.cpus, web.resources.mem) == (1, 256)
    assert list(withdrawn.demands) == []
    for bad in (
        lambda: sdk.Demand("x", 0, cpus=1, mem=1),
        lambda: sdk.Demand("x", 2, cpus=1, mem=1, min_member=3),
        lambda: sdk.Demand("x", 1, cpus=float("nan"), mem=1),
        lambda: sdk.Demand("", 1, cpus=1, mem=1),
    ):
        with pytest.raises(ValueError):
            bad()


async def test_reconnects_and_resubscribes_with_the_same_framework_id(master: FakeMaster) -> None:
    rec = Recorder()
    async with driver_for(master, rec) as driver:
        first_stream = driver.stream_id
        await master.restart()  # the master goes away and comes back on the same port
        await master.wait_for_subscriptions(2)
        await until(lambda: rec.names().count("subscribed") == 2, "the second SUBSCRIBED")
        await driver.suppress()
        await driver.stop()
    assert rec.names() == ["subscribed", "disconnected", "subscribed"]
    again = master.subscriptions[1].framework_info
    assert again.id == "framework-1"
    assert again.name == "t"
    (suppress,) = master.calls_of("Suppress")
    assert suppress.caller.stream_id != first_stream  # calls use the new stream


async def test_a_suppression_is_told_again_after_resubscribing_and_a_revive_undoes_it(
    master: FakeMaster,
) -> None:
    """A new leading master knows nothing of a framework's suppression, and one the master kept
    must not outlive a revive the framework asked while away: the driver tells its last wish
    again after each re-subscription. Asked while not subscribed, the call still raises (the
    contract of every call), and the wish takes effect when the driver subscribes."""
    rec = Recorder()
    async with driver_for(master, rec) as driver:
        await driver.suppress()
        await master.restart()
        await master.wait_for_subscriptions(2)
        (_, again) = await master.wait_for_calls("Suppress", 2)
        assert again.caller.stream_id == driver.stream_id  # on the new subscription
        await master.stop()
        await until(lambda: rec.names().count("disconnected") == 2, "the second disconnect")
        with pytest.raises(sdk.NotSubscribedError):
            await driver.revive()
        await master.start()
        await master.wait_for_subscriptions(3)
        (revive,) = await master.wait_for_calls("Revive", 1)
        assert revive.caller.stream_id == driver.stream_id
        await driver.stop()
    assert len(master.calls_of("Suppress")) == 2  # not told again once revived


async def test_calls_while_disconnected_raise_an_unavailable_call_error(
    master: FakeMaster,
) -> None:
    rec = Recorder()
    async with driver_for(master, rec) as driver:
        await master.stop()
        await until(lambda: "disconnected" in rec.names(), "the disconnected callback")
        assert not driver.subscribed
        with pytest.raises(sdk.CallError) as caught:
            await driver.revive()
        await driver.stop()
    assert isinstance(caught.value, sdk.NotSubscribedError)
    assert caught.value.code == grpc.StatusCode.UNAVAILABLE


async def test_missing_heartbeats_make_the_driver_reconnect() -> None:
    async with FakeMaster(heartbeat_interval=0.05) as master:
        rec = Recorder()
        async with driver_for(master, rec, missed_heartbeats=3) as driver:
            master.mute_heartbeats = True
            await master.wait_for_subscriptions(2)
            master.mute_heartbeats = False
            await until(lambda: rec.names().count("subscribed") == 2, "the second SUBSCRIBED")
            await driver.stop()
    assert rec.names()[:3] == ["subscribed", "disconnected", "subscribed"]
    assert master.subscriptions[1].framework_info.id == "framework-1"


async def test_heartbeats_keep_a_quiet_connection_alive() -> None:
    # A 1 s heartbeat timeout (4 missed of 0.25 s), not tens of milliseconds: a busy machine
    # can stall this process that long, and the driver is right to give up on a silent stream.
    async with FakeMaster(heartbeat_interval=0.25) as master:
        rec = Recorder()
        async with driver_for(master, rec, missed_heartbeats=4) as driver:
            # Three times the heartbeat timeout, with only heartbeats on the stream.
            await master.wait_for(lambda: master.heartbeats_sent >= 12, 30, "12 heartbeats")
            await master.send_offers([offer("o1")])
            await until(lambda: "offers" in rec.names(), "the offers callback")
            await driver.stop()
    assert rec.names() == ["subscribed", "offers"]
    assert len(master.subscriptions) == 1


async def test_an_error_event_ends_the_driver_without_reconnecting(master: FakeMaster) -> None:
    rec = Recorder()
    async with driver_for(master, rec) as driver:
        await master.send_error("framework removed by the operator")
        with pytest.raises(sdk.FrameworkError, match="removed by the operator"):
            await asyncio.wait_for(driver.wait(), TIMEOUT)
    assert rec.names() == ["subscribed", "error"]
    assert len(master.subscriptions) == 1


async def test_a_refused_subscription_is_fatal(master: FakeMaster) -> None:
    master.refuse("Subscribe", grpc.StatusCode.INVALID_ARGUMENT, "role 'no such' is unknown")
    with pytest.raises(sdk.CallError) as caught:
        async with driver_for(master, Recorder()):
            pass
    assert caught.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "unknown" in caught.value.message
    assert len(master.subscriptions) == 1


async def test_an_unreachable_master_is_a_connect_error_after_the_timeout() -> None:
    master = FakeMaster()
    await master.start()
    address = master.address
    await master.stop()  # nothing listens there now
    driver = sdk.Driver(
        Recorder(),
        sdk.FrameworkInfo(name="t"),
        address,
        connect_timeout=0.3,
        backoff=sdk.Backoff(initial=0.02, maximum=0.05),
        tls=master.tls,
    )
    with pytest.raises(sdk.ConnectError, match=f"master at {address} within 0.3 s"):
        async with driver:
            pass


async def test_a_slow_scheduler_receives_every_event_in_order(master: FakeMaster) -> None:
    rec = Recorder()
    rec.release.clear()  # status callbacks block until released
    async with driver_for(master, rec, event_queue_size=2) as driver:
        for i in range(20):
            await master.send_update([status(f"t{i}", f"u{i}".encode())])
        rec.release.set()

        def acked() -> list[str]:
            calls = master.calls_of("Acknowledge")
            return [a.task_id for call in calls for a in call.acknowledgements]

        await master.wait_for(lambda: len(acked()) >= 20, what="20 acknowledgements")
        await driver.stop()
    assert [name for name, _ in rec.log if name == "status"] == ["status"] * 20
    assert [arg for name, arg in rec.log if name == "status"] == [f"t{i}" for i in range(20)]
    # Acks may share a call (one is in flight while the next ones queue) but keep their order.
    assert acked() == [f"t{i}" for i in range(20)]


async def test_calls_made_together_share_one_batch_on_the_calls_stream(
    master: FakeMaster,
) -> None:
    async with driver_for(master, Recorder()) as driver:
        await asyncio.gather(*(driver.decline([f"o{i}"], refuse_seconds=0) for i in range(20)))
        await driver.stop()
    declines = master.calls_of("Decline")
    assert sorted(list(d.offer_ids) for d in declines) == sorted([f"o{i}"] for i in range(20))
    # Unary calls would leave call_batches at 0; one batch per call would make it 20.
    assert 1 <= master.call_batches < 20


async def test_a_master_without_the_calls_stream_gets_unary_calls() -> None:
    async with (
        FakeMaster(calls_stream=False) as master,
        driver_for(master, Recorder()) as driver,
    ):
        await driver.decline(["o1"], refuse_seconds=0)
        master.refuse("Suppress", grpc.StatusCode.FAILED_PRECONDITION, "stale stream")
        with pytest.raises(sdk.CallError) as caught:
            await driver.suppress()
        await driver.revive()
        await driver.stop()
    assert [c.method for c in master.calls] == ["Decline", "Suppress", "Revive"]
    assert master.call_batches == 0
    assert caught.value.code == grpc.StatusCode.FAILED_PRECONDITION
    assert caught.value.message == "stale stream"


async def test_a_call_waiting_when_the_master_goes_away_fails_with_a_call_error() -> None:
    async with FakeMaster() as master, driver_for(master, Recorder()) as driver:
        master.hold_calls = True
        pending = asyncio.create_task(driver.decline(["o1"], refuse_seconds=0))
        await master.wait_for_calls("Decline")
        await master.stop()
        with pytest.raises(sdk.CallError) as caught:
            await asyncio.wait_for(pending, TIMEOUT)
        await driver.stop()
    assert caught.value.method == "Decline"
    assert caught.value.code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED)


async def test_a_call_the_master_never_answers_fails_at_its_timeout_and_others_go_on(
    master: FakeMaster,
) -> None:
    async with driver_for(master, Recorder(), call_timeout=0.5) as driver:
        master.hold_calls = True
        held = asyncio.create_task(driver.decline(["o1"], refuse_seconds=0))
        await master.wait_for_calls("Decline")
        with pytest.raises(sdk.CallError) as caught:
            await asyncio.wait_for(held, TIMEOUT)
        # The stream is not broken by one unanswered call: the next call is answered.
        master.hold_calls = False
        await driver.suppress()
        await driver.stop()
    assert caught.value.method == "Decline"
    assert caught.value.code == grpc.StatusCode.DEADLINE_EXCEEDED
    assert caught.value.message == "no answer within 0.5 s"
    assert [c.method for c in master.calls] == ["Decline", "Suppress"]
    assert master.call_batches == 2


async def test_calls_past_the_batch_size_go_out_in_several_batches(master: FakeMaster) -> None:
    # 40 declines of ~85 kB: 3.4 MB. A batch holds at most 1 MiB plus one call, so >= 3.
    ids = [[f"offer-{i:02d}-{n:06d}" for n in range(5000)] for i in range(40)]
    async with driver_for(master, Recorder()) as driver:
        await asyncio.gather(*(driver.decline(batch, refuse_seconds=0) for batch in ids))
        await driver.stop()
    declines = master.calls_of("Decline")
    assert sorted(list(d.offer_ids) for d in declines) == sorted(ids)
    assert master.call_batches >= 3


async def test_each_call_tells_the_master_how_long_its_caller_still_waits(
    master: FakeMaster,
) -> None:
    async with driver_for(master, Recorder(), call_timeout=7.0) as driver:
        await driver.suppress()
        await driver.revive()
        await driver.stop()
    assert len(master.call_timeouts) == 2
    assert all(6.0 < t <= 7.0 for t in master.call_timeouts), master.call_timeouts


async def test_a_broken_calls_stream_fails_its_calls_and_the_next_call_opens_a_new_one(
    master: FakeMaster,
) -> None:
    async with driver_for(master, Recorder()) as driver:
        master.break_calls_stream = grpc.StatusCode.RESOURCE_EXHAUSTED
        with pytest.raises(sdk.CallError) as caught:
            await driver.suppress()
        await driver.revive()  # on a new stream, same subscription
        await driver.stop()
    assert caught.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert [c.method for c in master.calls] == ["Revive"]
    assert len(master.subscriptions) == 1


async def test_after_resubscribing_it_asks_about_every_task_not_known_to_have_ended(
    master: FakeMaster,
) -> None:
    rec = Recorder()
    async with driver_for(master, rec) as driver:
        assert master.calls_of("Reconcile") == []  # a new framework has nothing to ask
        await driver.launch(
            [offer("o1")], [sdk.task("a", "true", 0.1, 32), sdk.task("b", "true", 0.1, 32)]
        )
        await driver.launch([offer("o2", agent_id="agent-2")], [sdk.task("c", "true", 0.1, 32)])
        launched = [t for acc in master.calls_of("Accept") for t in acc.operations[0].launch.tasks]
        a, b, c = (t.task_id for t in launched)
        await master.send_update(
            [
                TaskStatus(task_id=a, agent_id="agent-1", state=TaskState.TASK_STATE_FINISHED),
                TaskStatus(task_id=b, agent_id="agent-1", state=TaskState.TASK_STATE_RUNNING),
            ]
        )
        await until(lambda: rec.names().count("status") == 2, "both statuses handled")
        await master.restart()
        (reconcile,) = await master.wait_for_calls("Reconcile")
        await driver.stop()
    asked = sorted((t.task_id, t.agent_id) for t in reconcile.tasks)
    assert asked == sorted([(b, "agent-1"), (c, "agent-2")])


async def test_a_new_process_failing_over_asks_about_all_its_tasks(master: FakeMaster) -> None:
    info = sdk.FrameworkInfo(id="framework-1", name="t", role="*")
    backoff = sdk.Backoff(initial=0.02, maximum=0.1)
    async with sdk.Driver(
        Recorder(), info, master.address, backoff=backoff, tls=master.tls
    ) as driver:
        (reconcile,) = await master.wait_for_calls("Reconcile")
        await driver.stop()
    assert list(reconcile.tasks) == []  # implicit: every task the master knows


async def test_a_teardown_from_a_status_callback_is_quiet(master: FakeMaster) -> None:
    class Finish(sdk.Scheduler):
        async def status(self, driver: sdk.Driver, status: TaskStatus) -> None:
            await driver.teardown()  # the job is done

    master.refuse("Acknowledge", grpc.StatusCode.NOT_FOUND, "framework is not subscribed")
    with structlog.testing.capture_logs() as logs:
        async with driver_for(master, Finish()) as driver:
            await master.send_update([status("t1", uuid=b"u1")])
            await asyncio.wait_for(driver.wait(), TIMEOUT)
    assert master.calls_of("Teardown")
    assert [e for e in logs if e["log_level"] == "warning"] == []


async def test_a_refused_acknowledgement_is_a_structured_warning(master: FakeMaster) -> None:
    master.refuse("Acknowledge", grpc.StatusCode.UNAVAILABLE, "busy")
    with structlog.testing.capture_logs() as logs:
        async with driver_for(master, Recorder()) as driver:
            await master.send_update([status("t1", uuid=b"u1")])
            await master.wait_for_calls("Acknowledge")
            # A quiet call: its refusal comes after the call has returned.
            await until(lambda: any(e["log_level"] == "warning" for e in logs), "the warning")
            await driver.stop()
    warnings = [e for e in logs if e["log_level"] == "warning"]
    assert warnings == [
        {
            "event": "acknowledgements not sent",
            "count": 1,
            "error": "Acknowledge failed: UNAVAILABLE: busy",
            "log_level": "warning",
        }
    ]


async def test_demands_are_told_again_after_resubscribing(master: FakeMaster) -> None:
    async with driver_for(master, Recorder()) as driver:
        await driver.set_demands([sdk.Demand("web", 3, cpus=1, mem=256)])
        await master.restart()  # a restarted master does not keep demands
        calls = await master.wait_for_calls("SetDemands", count=2)
        await driver.stop()
    first, again = (list(c.demands) for c in calls)
    assert first == again
    assert calls[1].demands[0].name == "web" and calls[1].demands[0].count == 3


async def test_cancelled_while_connecting_it_leaves_no_task_running() -> None:
    master = FakeMaster()
    await master.start()
    address = master.address
    await master.stop()  # nothing listens: the driver keeps retrying until cancelled
    before = asyncio.all_tasks()
    driver = sdk.Driver(
        Recorder(),
        sdk.FrameworkInfo(name="t"),
        address,
        connect_timeout=None,
        backoff=sdk.Backoff(initial=0.02, maximum=0.05),
        tls=master.tls,  # plain text, as the fake master speaks: not the host's credential
    )

    async def enter() -> None:
        async with driver:
            raise AssertionError("subscribed to a master that is not there")

    entering = asyncio.ensure_future(enter())
    await until(lambda: len(asyncio.all_tasks()) > len(before) + 1, "the driver's tasks")
    entering.cancel()
    with pytest.raises(asyncio.CancelledError):
        await entering
    left = {t.get_name() for t in asyncio.all_tasks() - before if not t.done()}
    assert left == set(), f"tasks left running after the cancel: {left}"
