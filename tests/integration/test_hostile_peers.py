"""A buggy or hostile framework or agent, with raw gRPC stubs against a real master: each input
is refused with a reason, and the master and the rest of the cluster go on."""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest

from corral import limits
from corral.frameworks.sdk.testing import LocalCluster
from corral.v1 import agent_pb2, agent_pb2_grpc
from corral.v1 import common_pb2 as pb
from corral.v1 import scheduler_pb2 as s
from tests.integration.test_bad_input import RawFramework, task

pytestmark = pytest.mark.e2e


@pytest.fixture
async def cluster(tmp_path: Any) -> AsyncIterator[LocalCluster]:
    async with LocalCluster(
        agents=1, work_dir=tmp_path, master_args=("--allocation-interval", "0.2")
    ) as c:
        yield c


@pytest.fixture
async def channel(cluster: LocalCluster) -> AsyncIterator[grpc.aio.Channel]:
    async with cluster.channel() as ch:
        yield ch


async def _framework(channel: grpc.aio.Channel) -> RawFramework:
    fw = RawFramework(channel)
    await fw.subscribe()
    return fw


async def _refused(call: Any) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await call
    return info.value


async def test_a_decline_naming_an_offer_twice_is_refused_and_the_agent_is_offered_again(
    channel: grpc.aio.Channel,
) -> None:
    fw = await _framework(channel)
    offer = await fw.next_offer()
    error = await _refused(
        fw.stub.Decline(
            s.DeclineRequest(
                caller=fw.caller,
                offer_ids=[offer.id, offer.id],
                filters=s.Filters(refuse_seconds=0),
            ),
            timeout=10,
        )
    )
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "appears twice" in (error.details() or "")
    # The offer was left alone: it can still be declined, and the agent comes back.
    await fw.stub.Decline(
        s.DeclineRequest(
            caller=fw.caller, offer_ids=[offer.id], filters=s.Filters(refuse_seconds=0)
        ),
        timeout=10,
    )
    again = await fw.next_offer()
    assert again.agent_id == offer.agent_id
    await fw.close()


async def test_two_tasks_of_one_accept_never_share_a_port(
    cluster: LocalCluster, channel: grpc.aio.Channel
) -> None:
    fw = await _framework(channel)
    offer = await fw.next_offer()
    port = offer.resources.ports[0].begin

    def with_port(task_id: str, p: int) -> pb.TaskInfo:
        t = task(task_id, command="sleep 30")
        t.resources.ports.add(begin=p, end=p)
        return t

    error = await _refused(fw.accept([offer.id], with_port("a", port), with_port("b", port)))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "same port" in (error.details() or "")
    await fw.accept([offer.id], with_port("a", port), with_port("b", port + 1))
    state = await cluster.state()
    ports = sorted(r.begin for t in state.tasks for r in t.info.resources.ports)
    assert ports == [port, port + 1]
    await fw.close()


@pytest.mark.parametrize(
    ("mutate", "reason"),
    [
        (lambda f: setattr(f, "name", "x" * 5_000_000), "limit of 255"),
        (lambda f: setattr(f, "role", "r" * 300), "role is 300 characters"),
        (
            lambda f: f.offer_constraints.extend(
                [pb.AttributeConstraint(attribute=f"a{i}") for i in range(100)]
            ),
            "offer constraints: 100 given",
        ),
    ],
    ids=["5MB-name", "long-role", "many-constraints"],
)
async def test_oversized_framework_info_is_refused_and_get_still_answers(
    cluster: LocalCluster, channel: grpc.aio.Channel, mutate: Any, reason: str
) -> None:
    fw = RawFramework(channel)
    info = pb.FrameworkInfo(name="big", role="*")
    mutate(info)
    call = fw.stub.Subscribe(s.SubscribeRequest(framework_info=info))
    error = await _refused(call.read())
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert reason in (error.details() or "")
    assert len(error.details() or "") < 300, "the error repeats the whole oversized value"
    state = await cluster.state()
    assert list(state.frameworks) == []


async def test_call_limits_are_enforced_with_invalid_argument(channel: grpc.aio.Channel) -> None:
    fw = await _framework(channel)
    too_many = [f"t{i}" for i in range(limits.MAX_IDS_PER_CALL + 1)]
    error = await _refused(
        fw.stub.Reconcile(
            s.ReconcileRequest(
                caller=fw.caller, tasks=[s.ReconcileTask(task_id=t) for t in too_many]
            ),
            timeout=10,
        )
    )
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "tasks to reconcile" in (error.details() or "")
    offer = await fw.next_offer()
    big = task("big")
    big.command.environment["X"] = "x" * (limits.MAX_TASK_BYTES + 1)
    error = await _refused(fw.accept([offer.id], big))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "bytes on the wire" in (error.details() or "")
    error = await _refused(
        fw.stub.Kill(s.KillRequest(caller=fw.caller, task_id="k" * 1_000_000), timeout=10)
    )
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert len(error.details() or "") < 300
    await fw.close()


async def test_stream_ids_are_unguessable_and_a_takeover_needs_the_same_name(
    channel: grpc.aio.Channel,
) -> None:
    owner = await _framework(channel)
    other = await _framework(channel)
    assert owner.caller.stream_id != other.caller.stream_id
    for stream_id in (owner.caller.stream_id, other.caller.stream_id):
        assert len(stream_id) >= 24 and "stream" not in stream_id
    thief = RawFramework(channel)
    call = thief.stub.Subscribe(
        s.SubscribeRequest(
            framework_info=pb.FrameworkInfo(id=owner.caller.framework_id, name="not-raw", role="*")
        )
    )
    error = await _refused(call.read())
    assert error.code() == grpc.StatusCode.PERMISSION_DENIED
    # The owner's stream is untouched: its calls still work.
    await owner.stub.Suppress(s.SuppressRequest(caller=owner.caller), timeout=10)
    await owner.close()
    await other.close()


class RawAgent:
    """One AgentService.Connect stream, driven by hand."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        stub = agent_pb2_grpc.AgentServiceStub(channel)  # type: ignore[no-untyped-call]
        self.call = stub.Connect()

    async def register(self, info: pb.AgentInfo, secret: str = "", **kw: Any) -> Any:
        await self.call.write(
            agent_pb2.AgentMessage(register=agent_pb2.Register(info=info, secret=secret, **kw))
        )
        async with asyncio.timeout(10):
            return await self.call.read()


def _info(agent_id: str = "", cpus: float = 1.0) -> pb.AgentInfo:
    return pb.AgentInfo(id=agent_id, hostname="rogue", resources=pb.Resources(cpus=cpus, mem=512))


async def _error_of(agent: RawAgent, info: pb.AgentInfo, **kw: Any) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await agent.register(info, **kw)
    return caught.value


async def test_bad_agent_registrations_are_refused_and_leave_no_record(
    cluster: LocalCluster, channel: grpc.aio.Channel
) -> None:
    before = await cluster.state()
    cases = [
        (_info(cpus=1e308), "more than the limit"),
        (
            pb.AgentInfo(
                hostname="rogue",
                resources=pb.Resources(cpus=1, mem=512),
                reservations={"web": pb.Resources(cpus=4)},
            ),
            "reservations",
        ),
        (
            pb.AgentInfo(
                hostname="rogue",
                resources=pb.Resources(cpus=1, mem=512),
                attributes={f"k{i}": "v" for i in range(limits.MAX_ATTRIBUTES + 1)},
            ),
            "agent attributes",
        ),
    ]
    for info, reason in cases:
        error = await _error_of(RawAgent(channel), info)
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, error
        assert reason in (error.details() or "")
    for retry in (-1.0, math.nan, math.inf):  # it bounds how long acknowledgements are held
        error = await _error_of(RawAgent(channel), _info(), status_retry_seconds=retry)
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, error
        assert "register.status_retry_seconds must be a finite number" in (error.details() or "")
    huge_task = pb.TaskInfo(
        task_id="t",
        framework_id="F",
        command=pb.CommandInfo(value="true"),
        resources=pb.Resources(cpus=1000, mem=1),
    )
    running = pb.TaskStatus(task_id="t", framework_id="F", state=pb.TASK_STATE_RUNNING)
    # With an id the master does not know and a secret that is not its seal for this
    # certificate, refused before its tasks are looked at (issue #41); the size of what a
    # known agent reports is checked in tests/unit/test_master_core_hardening.py.
    huge = (_info(agent_id="X1"), [huge_task], [running])
    error = await _error_of(RawAgent(channel), huge[0], tasks=huge[1], task_statuses=huge[2])
    assert error.code() == grpc.StatusCode.PERMISSION_DENIED, error
    assert "agent id 'X1' is not known to this master" in (error.details() or "")
    error = await _error_of(RawAgent(channel), _info(), tasks=[huge_task], task_statuses=[running])
    assert "only an agent re-registering with its id recovers tasks" in (error.details() or "")
    after = await cluster.state()
    assert [a.info.id for a in after.agents] == [a.info.id for a in before.agents]


async def test_an_agent_id_without_its_secret_is_refused_and_the_real_agent_keeps_its_tasks(
    cluster: LocalCluster, channel: grpc.aio.Channel
) -> None:
    fw = await _framework(channel)
    offer = await fw.next_offer()
    await fw.accept([offer.id], task("victim", command="sleep 60"))

    async def running() -> bool:
        state = await cluster.state()
        return any(t.status.state == pb.TASK_STATE_RUNNING for t in state.tasks)

    async with asyncio.timeout(20):
        while not await running():
            await asyncio.sleep(0.05)
    error = await _error_of(RawAgent(channel), _info(agent_id=offer.agent_id), secret="guess")
    assert error.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "another agent" in (error.details() or "")
    state = await cluster.state()
    assert [(t.info.task_id, t.status.state) for t in state.tasks] == [
        ("victim", pb.TASK_STATE_RUNNING)
    ]
    assert [a.active for a in state.agents] == [True]
    await fw.close()


async def test_a_rogue_agent_cannot_report_another_agents_task(
    cluster: LocalCluster, channel: grpc.aio.Channel
) -> None:
    fw = await _framework(channel)
    offer = await fw.next_offer()
    await fw.accept([offer.id], task("victim", command="sleep 60"))
    rogue = RawAgent(channel)
    registered = await rogue.register(_info())
    rogue_id = registered.registered.agent_id
    assert rogue_id and rogue_id != offer.agent_id
    await rogue.call.write(
        agent_pb2.AgentMessage(
            status_updates=agent_pb2.StatusUpdates(
                statuses=[
                    pb.TaskStatus(
                        task_id="victim",
                        framework_id=fw.caller.framework_id,
                        agent_id=offer.agent_id,
                        state=pb.TASK_STATE_FINISHED,
                        uuid=b"u" * 16,
                    )
                ]
            )
        )
    )

    async def acked() -> bool:
        async with asyncio.timeout(10):
            msg = await rogue.call.read()
        return msg.HasField("acknowledgements")

    assert await acked(), "the master did not answer the rogue's status with an ack"
    # The framework never heard of a FINISHED victim; the real task runs on.
    while not fw.events.empty():
        event = fw.events.get_nowait()
        if event.HasField("update"):
            assert all(u.state != pb.TASK_STATE_FINISHED for u in event.update.statuses), event
    state = await cluster.state()
    assert [t.info.task_id for t in state.tasks if t.status.state != pb.TASK_STATE_FINISHED] == [
        "victim"
    ]
    await fw.close()
