"""What a job file says (``corral job submit -f job.yaml``): the batch or gang shape ``corral run``
takes today, plus ``queue``, ``priority_class``, an optional ``schedule`` (cron) and ``container``
(``{"image": NAME}``: its tasks run in that Docker image, on agents that run images). Checked
when read: a ``ValueError`` names the field (the CLI exits 2 with it, the API answers 400).

::

    name: nightly-etl              # letters, digits, . _ - (a run of a periodic job adds -MINUTE)
    queue: team-a                  # a local queue (docs/jobs.md); default: "default"
    priority_class: batch          # its order in the queue, and its tasks' class at the master
    schedule: {cron: "0 3 * * *", time_zone: Europe/Berlin, concurrency_policy: Forbid}
    suspend: false
    # a batch job: the batch job file's fields (docs/frameworks.md)
    stages: [{name: map, tasks: 400, cpus: 0.5, mem: 256, command: ./map.sh}]
    max_retries: 3
    # or a gang: the trainer's fields (workers, steps, gpus, cpus, mem, command, ...)

A job's **request** is what it can run at once, the amount its queue reserves on admission:
for a batch job the most any one stage holds (its tasks, within ``max_cpus``), for a gang all
its workers.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal

from corral.frameworks.batch.job import JobSpec as BatchSpec
from corral.frameworks.gang.spec import TrainSpec
from corral.frameworks.jobs.cron import Schedule
from corral.frameworks.jobs.queues import Vector
from corral.frameworks.sdk.placement import Constraint, Toleration

COMMON = {"name", "kind", "queue", "priority_class", "schedule", "suspend", "container"}
_NAME = re.compile(r"[a-z0-9]([a-z0-9.-]{0,50}[a-z0-9])?")
_GANG_FIELDS = {f.name for f in fields(TrainSpec)} - {"name", "priority_class"}
# Where a gang's checkpoints go when the file names no folder: the service makes one per job.
CHECKPOINT_PLACEHOLDER = "@service"


@dataclass(frozen=True)
class Container:
    image: str


@dataclass(frozen=True)
class JobFile:
    name: str
    kind: Literal["batch", "gang"]
    queue: str
    priority_class: str
    batch: BatchSpec | None
    gang: TrainSpec | None
    schedule: Schedule | None = None
    suspend: bool = False
    container: Container | None = None
    raw: Mapping[str, Any] | None = None  # as submitted (the store keeps it)

    @property
    def request(self) -> Vector:
        """What the job can run at once (its queue reserves it whole)."""
        if self.batch is not None:
            return batch_request(self.batch)
        assert self.gang is not None
        g = self.gang
        return (g.cpus * g.workers, g.mem * g.workers, 0.0, g.gpus * g.workers)

    @property
    def constraints(self) -> tuple[Constraint, ...]:
        spec = self.batch or self.gang
        assert spec is not None
        return spec.constraints

    @property
    def tolerations(self) -> tuple[Toleration, ...]:
        spec = self.batch or self.gang
        assert spec is not None
        return spec.tolerations

    def allows_flavor(self, attributes: Mapping[str, str]) -> bool:
        """Whether its constraints allow agents of a flavor with these attributes: each
        constraint on an attribute the flavor sets must match it."""
        return all(c.matches(attributes) for c in self.constraints if c.attribute in attributes)

    @classmethod
    def from_json(cls, data: Any) -> JobFile:
        if not isinstance(data, Mapping):
            raise ValueError(f"a job is an object, got {type(data).__name__}")
        name = data.get("name")
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ValueError(
                f"name: required, lower-case letters, digits, '.' and '-' (at most 52), "
                f"got {name!r}"
            )
        kind = data.get("kind")
        if kind is None:
            kind = "batch" if "stages" in data else "gang" if "workers" in data else None
        if kind not in ("batch", "gang"):
            raise ValueError(
                "kind: batch (give stages) or gang (give workers and steps)"
                + (f", got {kind!r}" if kind is not None else "")
            )
        queue = data.get("queue", "default")
        if not isinstance(queue, str) or not queue:
            raise ValueError(f"queue: must be a queue's name, got {queue!r}")
        pclass = data.get("priority_class", "batch" if kind == "batch" else "")
        if not isinstance(pclass, str):
            raise ValueError(f"priority_class: must be a class's name, got {pclass!r}")
        suspend = data.get("suspend", False)
        if not isinstance(suspend, bool):
            raise ValueError(f"suspend: must be true or false, got {suspend!r}")
        schedule = Schedule.from_json(data["schedule"]) if data.get("schedule") else None
        container = _container(data.get("container"))
        rest = {k: v for k, v in data.items() if k not in COMMON}
        batch = gang = None
        if container is not None and "image" in rest:
            raise ValueError("give the image once: container.image, not image beside it")
        if kind == "batch":
            batch = BatchSpec.from_dict({**rest, "name": name, "priority_class": pclass})
        else:
            gang = _gang(rest, name, pclass)
        if container is not None:
            # Its tasks run in the image, on agents that run images (the specs add that
            # constraint, as `corral run batch|gang --image` does).
            if batch is not None:
                batch = dataclasses.replace(batch, image=container.image)
            else:
                assert gang is not None
                gang = dataclasses.replace(gang, image=container.image)
        shape: Literal["batch", "gang"] = "batch" if kind == "batch" else "gang"
        job = cls(name, shape, queue, pclass, batch, gang, schedule, suspend, container, data)
        if any(not math.isfinite(v) for v in job.request):
            raise ValueError("the job's request is not finite")
        return job


def batch_request(spec: BatchSpec) -> Vector:
    """The most any stage holds at once: its tasks (within ``max_cpus``) times its shape."""
    most = [0.0, 0.0, 0.0, 0.0]
    for s in spec.stages:
        n = spec.at_once(s)
        for i, v in enumerate((s.cpus, s.mem, s.disk, s.gpus)):
            most[i] = max(most[i], n * v)
    return (most[0], most[1], most[2], most[3])


def _container(raw: Any) -> Container | None:
    if raw is None:
        return None
    if (
        not isinstance(raw, Mapping)
        or set(raw) != {"image"}
        or not isinstance(raw["image"], str)
        or not raw["image"]
        or any(ch.isspace() for ch in raw["image"])
    ):
        raise ValueError('container: {"image": "NAME"}, a Docker image\'s name')
    return Container(raw["image"])


def _gang(rest: Mapping[str, Any], name: str, pclass: str) -> TrainSpec:
    unknown = sorted(set(rest) - _GANG_FIELDS)
    if unknown:
        raise ValueError(
            f"unknown gang field {unknown[0]!r} (fields: {', '.join(sorted(_GANG_FIELDS))})"
        )
    for needed in ("workers", "steps"):
        if needed not in rest:
            raise ValueError(f"{needed}: required for a gang")
    values = dict(rest)
    values.setdefault("checkpoint_dir", CHECKPOINT_PLACEHOLDER)
    for key, kind in (("tolerations", Toleration), ("constraints", Constraint)):
        items = values.get(key, [])
        if not isinstance(items, list) or not all(isinstance(v, str) for v in items):
            raise ValueError(f"{key} must be a list of strings, got {items!r}")
        values[key] = tuple(kind.parse(v) for v in items)
    for key in ("gpus", "cpus", "mem", "step_seconds", "peer_timeout"):
        if key in values and isinstance(values[key], int) and not isinstance(values[key], bool):
            values[key] = float(values[key])
    try:
        return TrainSpec(name=name, priority_class=pclass, **values)
    except TypeError as err:
        raise ValueError(str(err)) from None
