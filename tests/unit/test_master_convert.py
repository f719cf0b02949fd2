"""Decoding tasks in the master shell: the cache of validated task resources."""

from __future__ import annotations

import math

import pytest

from corral.master import convert
from corral.resources import Resources
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
