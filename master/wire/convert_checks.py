"""Wire messages to core values, the checks every decoder shares: the input limits
(corral.limits), resources, and ``WireError``, which names the field a message got wrong."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence, Sized

from corral import limits
from corral.resources import ResourceError, Resources
from corral.v1 import common_pb2 as pb


class WireError(ValueError):
    """A message that cannot become a core value; the text names the problem."""


def text(value: str, what: str, limit: int) -> str:
    """``value`` if it is at most ``limit`` characters; the error repeats only its start."""
    if len(value) > limit:
        raise WireError(f"{what} is {len(value)} characters, more than the limit of {limit}")
    return value


def ident(value: str, what: str) -> str:
    return text(value, what, limits.MAX_ID_LENGTH)


def name(value: str, what: str) -> str:
    return text(value, what, limits.MAX_NAME_LENGTH)


def count(items: Sized, what: str, limit: int) -> None:
    if len(items) > limit:
        raise WireError(f"{what}: {len(items)} given, more than the limit of {limit}")


def idents(values: Sequence[str], what: str, limit: int) -> tuple[str, ...]:
    """A list of ids of one call: at most ``limit``, each at most MAX_ID_LENGTH characters."""
    count(values, what, limit)
    longest = max(values, key=len, default="")
    ident(longest, f"an entry of {what}")
    return tuple(values)


def uuid(value: bytes, what: str) -> bytes:
    if len(value) > limits.MAX_UUID_BYTES:
        raise WireError(
            f"{what} is {len(value)} bytes, more than the limit of {limits.MAX_UUID_BYTES}"
        )
    return value


def _mapping(values: Mapping[str, str], what: str, limit: int) -> dict[str, str]:
    if not values:
        # Most tasks carry no labels, and a protobuf map's items() walks through the abstract
        # ItemsView even when empty: 2 % of the master's time in the 1k x 50 load test.
        return {}
    count(values, what, limit)
    for key, value in values.items():
        name(key, f"{what} key {limits.echo(key)}")
        text(value, f"{what} {limits.echo(key)}", limits.MAX_VALUE_LENGTH)
    return dict(values)


def resources_from_pb(r: pb.Resources, what: str) -> Resources:
    try:
        return Resources(
            cpus=r.cpus,
            mem=r.mem,
            disk=r.disk,
            gpus=r.gpus,
            ports=tuple((p.begin, p.end) for p in r.ports),
        )
    except ResourceError as exc:
        raise WireError(f"{what}: {exc}") from None


# Validated task resources by value. A framework launches many tasks of few shapes, and building
# a validated ``Resources`` was most of decoding a task in the load-test profile; a cached value
# is the same immutable object the constructor would have made. Bounded: cleared when full.
_TASK_RESOURCES: dict[
    tuple[float, float, float, float, tuple[tuple[int, int], ...]], Resources
] = {}


_TASK_RESOURCES_MAX = 4096


def task_what(task_id: str) -> str:
    """How an error names a task (made only when there is an error to tell)."""
    return f"task {task_id!r}"


def task_resources_from_pb(r: pb.Resources, task_id: str) -> Resources:
    """A task's resources; equal ones are one object (kept for the next task that asks),
    which the core's tallies count once per kind (task_table.py rule 1)."""
    ports = r.ports  # usually empty: a generator per task was 3 % of the master
    key = (r.cpus, r.mem, r.disk, r.gpus, tuple((p.begin, p.end) for p in ports) if ports else ())
    known = _TASK_RESOURCES.get(key)  # NaN never equals itself, so it never hits: it is refused
    if known is not None:
        return known
    resources = resources_from_pb(r, task_what(task_id))
    if len(_TASK_RESOURCES) >= _TASK_RESOURCES_MAX:
        _TASK_RESOURCES.clear()
    _TASK_RESOURCES[key] = resources
    return resources


def resources_to_pb(r: Resources, out: pb.Resources) -> pb.Resources:
    return scalars_to_pb(r.scalars(), r.ports, out)


def scalars_to_pb(
    s: Sequence[float], ports: Iterable[tuple[int, int]], out: pb.Resources
) -> pb.Resources:
    """Resources given as (cpus, mem, disk, gpus) and port ranges (an offer keeps them so)."""
    out.cpus, out.mem, out.disk, out.gpus = s[0], s[1], s[2], s[3]
    for begin, end in ports:
        out.ports.add(begin=begin, end=end)
    return out
