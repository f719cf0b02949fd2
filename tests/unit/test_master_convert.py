"""Decoding in the master shell: the cache of validated task resources, limits, revocable
tasks and agents' usage reports."""

from __future__ import annotations

import math

import pytest

from corral.master.wire import convert
from corral.master.wire import usage as usage_wire
from corral.resources import Resources
from corral.v1 import agent_pb2
from corral.v1 import common_pb2 as pb


def _task(task_id: str, **resources: float) -> pb.TaskInfo:
    t = pb.TaskInfo(task_id=task_id, simulation=pb.SimulationInfo(duration_seconds=1.0))
    for name, value in resources.items():
        setattr(t.resources, name, value)
    return t


def test_tasks_of_one_shape_share_one_validated_value() -> None:
    a = convert.task_spec_from_pb(_task("a", cpus=1, mem=128))
    b = convert.task_spec_from_pb(_task("b", cpus=1, mem=128))
    assert a.resources == Resources(cpus=1, mem=128)
    assert a.resources is b.resources


def test_ports_are_part_of_the_shape() -> None:
    t = _task("p", cpus=1)
    t.resources.ports.add(begin=8000, end=8001)
    plain = convert.task_spec_from_pb(_task("q", cpus=1))
    with_ports = convert.task_spec_from_pb(t)
    assert plain.resources.ports == ()
    assert with_ports.resources.ports == ((8000, 8001),)


@pytest.mark.parametrize(
    ("resources", "message"),
    [
        ({"cpus": math.nan}, "cpus is NaN"),
        ({"mem": -1.0}, "mem is negative"),
        ({"cpus": math.inf}, "cpus is infinite"),
    ],
)
def test_invalid_resources_are_refused_every_time(
    resources: dict[str, float], message: str
) -> None:
    for _ in range(3):  # a refused value is never cached
        with pytest.raises(convert.WireError, match=message):
            convert.task_spec_from_pb(_task("bad", **resources))


def _qos_task(**fields: object) -> pb.TaskInfo:
    t = pb.TaskInfo(task_id="t", command=pb.CommandInfo(value="true", shell=True))
    t.resources.cpus, t.resources.mem = 1.0, 100.0
    for k, v in fields.items():
        if k == "limits":
            t.limits.CopyFrom(v)  # type: ignore[arg-type]
        else:
            setattr(t, k, v)
    return t


def test_limits_and_revocable_decode_into_the_spec() -> None:
    spec = convert.task_spec_from_pb(_qos_task(limits=pb.Resources(cpus=1.0, mem=100.0)))
    assert (spec.cpus_limit, spec.mem_limit, spec.qos.value) == (1.0, 100.0, "Guaranteed")
    spec = convert.task_spec_from_pb(_qos_task(revocable=True))
    assert spec.revocable == Resources(cpus=1.0, mem=100.0)
    assert spec.resources == Resources()  # charged nothing by the allocator


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"limits": pb.Resources(mem=50.0)}, "its mem limit 50 is below its mem request 100"),
        ({"limits": pb.Resources(cpus=2, mem=200, disk=1)}, "limits are for cpus and mem only"),
        ({"limits": pb.Resources(mem=float("nan"))}, "mem is NaN"),
    ],
)
def test_bad_limits_are_refused_naming_the_task(fields: dict[str, object], message: str) -> None:
    with pytest.raises(convert.WireError, match=message):
        convert.task_spec_from_pb(_qos_task(**fields))


def test_a_revocable_task_takes_cpus_and_mem_only() -> None:
    t = _qos_task(revocable=True)
    t.resources.disk = 10
    with pytest.raises(convert.WireError, match="takes cpus and mem only"):
        convert.task_spec_from_pb(t)


def test_a_custom_executor_needs_an_id_and_runs_as_a_process() -> None:
    t = _qos_task()
    t.executor.name = "mine"
    with pytest.raises(convert.WireError, match=r"executor\.executor_id is empty"):
        convert.task_spec_from_pb(t)
    t.executor.executor_id = "x" * 300
    with pytest.raises(convert.WireError, match=r"executor\.executor_id"):
        convert.task_spec_from_pb(t)
    t.executor.executor_id = "e1"
    convert.task_spec_from_pb(t)  # accepted
    t.container.docker.image = "busybox"
    with pytest.raises(convert.WireError, match="runs as a process"):
        convert.task_spec_from_pb(t)


def _usage(**agent: object) -> agent_pb2.UsageReport:
    msg = agent_pb2.UsageReport()
    msg.agent.mem_total, msg.agent.mem_used = 1000.0, 100.0
    for k, v in agent.items():
        setattr(msg.agent, k, v)
    msg.tasks.add(task_id="t", framework_id="f", cpus=0.5, mem=100.0)
    return msg


def test_a_usage_report_decodes_and_bad_ones_are_refused() -> None:
    usage, tasks = usage_wire.agent_usage_from_pb(_usage(memory_pressure="hard"))
    assert (usage.pressure, usage.mem_used) == ("hard", 100.0)
    assert [(t.framework_id, t.task_id, t.mem) for t in tasks] == [("f", "t", 100.0)]
    with pytest.raises(convert.WireError, match="unknown memory pressure"):
        usage_wire.agent_usage_from_pb(_usage(memory_pressure="extreme"))
    with pytest.raises(convert.WireError, match="mem_used is not a finite number"):
        usage_wire.agent_usage_from_pb(_usage(mem_used=float("inf")))
    bad = _usage()
    bad.tasks[0].mem = float("nan")
    with pytest.raises(convert.WireError, match="a task's mem is not a finite number"):
        usage_wire.agent_usage_from_pb(bad)


def test_a_task_past_the_size_limit_is_refused_whether_alone_or_beside_small_ones() -> None:
    from corral import limits
    from corral.v1 import scheduler_pb2

    def request(*sizes: int) -> scheduler_pb2.AcceptRequest:
        r = scheduler_pb2.AcceptRequest()
        launch = r.operations.add().launch
        for i, n in enumerate(sizes):
            t = launch.tasks.add(task_id=f"t{i}", resources=pb.Resources(cpus=1))
            t.command.value = "true"
            t.command.environment["X"] = "x" * n
        return r

    small = convert.accept_tasks(request(10, 10))  # the call's one size stands for each task
    assert [t.task_id for t in small] == ["t0", "t1"]
    for sizes in ((limits.MAX_TASK_BYTES + 1,), (10, limits.MAX_TASK_BYTES + 1)):
        with pytest.raises(convert.WireError, match=r"task 't.*' is .* bytes on the wire"):
            convert.accept_tasks(request(*sizes))
    # Two tasks each under the limit, together past it: each is measured, and each passes.
    half = limits.MAX_TASK_BYTES // 2 + 100
    assert len(convert.accept_tasks(request(half, half))) == 2
