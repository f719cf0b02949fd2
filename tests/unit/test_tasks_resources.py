"""``records.tasks_resources`` adds the scalars itself and merges ports once: it must equal
the sum ``Resources.__add__`` makes task by task, bit for bit (the kept agent arrays and the
views compare sums made both ways)."""

from __future__ import annotations

import random

import pytest

from corral.master.core.records import TaskRecord, tasks_resources
from corral.master.core.types import TaskSpec, TaskState
from corral.resources import Resources
from corral.tasks import Status


def _record(i: int, resources: Resources) -> TaskRecord:
    spec = TaskSpec(task_id=f"t{i}", name=f"t{i}", resources=resources)
    running = Status(f"t{i}", "f", "a", TaskState.RUNNING)
    return TaskRecord(spec, "f", "a", TaskState.RUNNING, running, 0.0)


@pytest.mark.parametrize("seed", range(20))
def test_the_sum_is_the_one_plus_makes(seed: int) -> None:
    rnd = random.Random(seed)
    records = []
    for i in range(rnd.randint(0, 40)):
        begin = rnd.randint(1000, 1100)
        ports = ((begin, begin + rnd.randint(0, 5)),) if rnd.random() < 0.3 else ()
        scalars = (rnd.random() * 3, rnd.random() * 1000, rnd.choice([0.0, rnd.random()]), 0.0)
        records.append(_record(i, Resources(*scalars, ports=ports)))
    total = Resources()
    for r in records:
        total = total + r.spec.resources
    got = tasks_resources(records)
    assert (got.scalars(), got.ports) == (total.scalars(), total.ports)
