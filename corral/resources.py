"""Resources: the scalar vector (cpus, mem, disk, gpus) plus port ranges.

Scalars are kept in a fixed order (``SCALARS``) so that the allocator can treat them as a dense
vector; ports are ranges that travel with the agent's free scalars and are never part of fairness.
Every constructor validates: quantities are finite, non-negative and at most
``corral.limits.MAX_SCALAR``, ranges are ordered and disjoint. Parsing the command-line form
raises ``ValueError`` with a message that names the offending part.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from corral.limits import MAX_SCALAR, echo
from corral.pairs import items

if TYPE_CHECKING:  # the array form only: numpy is the server extra's, not the base install's
    import numpy as np
    import numpy.typing as npt

SCALARS: tuple[str, ...] = ("cpus", "mem", "disk", "gpus")
# The one tolerance of every scalar comparison in Corral (master, allocator, agent, SDK): sums
# of floats and quantities off the wire differ from the exact figure by float noise, so two
# quantities this close are equal, and a remainder below it is dust (not offered, not free).
# The compiled kernels read this module-level float too (numba freezes it as a constant).
EPSILON = 1e-9
# The smallest quantity a task or a demand may ask for (Mesos keeps scalars as fixed point
# with three decimals). Asking for less but more than nothing is refused: a shape of 1e-300
# cpus would "fit" 1e300 times on an agent, past what any count can hold.
GRANULARITY = 0.001

PortRanges = tuple[tuple[int, int], ...]


def covers(have: float, need: float) -> bool:
    """The one fit comparison, for one resource: ``have`` holds ``need`` within EPSILON. A
    resource the shape does not ask for (``need <= 0``) is not looked at, so a shape fits an
    over-committed agent (free below zero) in the resources it does not ask for, as the
    allocator offers it."""
    return need <= 0 or need <= have + EPSILON


def fits(free: Sequence[float], shape: Sequence[float]) -> bool:
    """One task of ``shape`` fits in ``free`` (scalars in SCALARS order): ``covers`` in every
    resource. The allocator's rooms, the master's why-pending reasons, preemption, the gang cut,
    the accept check (``Resources.contains``) and the SDK all ask this."""
    return all(covers(have, need) for have, need in zip(free, shape, strict=True))


def lacking(free: Sequence[float], shape: Sequence[float]) -> list[int]:
    """The resources (indices into SCALARS) in which ``shape`` does not fit ``free``."""
    return [
        k for k, (have, need) in enumerate(zip(free, shape, strict=True)) if not covers(have, need)
    ]


def covers_array(have: npt.NDArray[np.float64], need: float) -> npt.NDArray[np.bool_]:
    """``covers`` for one resource over many rows (``have``: a numpy array), the same
    comparison vectorised: the allocator's rooms and the master's why-pending scan ask it of
    every agent at once."""
    import numpy as np  # only server code (the allocator, the master) asks for arrays

    if need <= 0:
        return np.ones(have.shape, dtype=np.bool_)
    return np.asarray(need <= have + EPSILON)


def fits_rows(free: npt.NDArray[np.float64], shape: Sequence[float]) -> npt.NDArray[np.bool_]:
    """``fits`` of each row of ``free`` ([n, len(SCALARS)]): ``covers_array`` per resource."""
    import numpy as np

    out = np.ones(free.shape[0], dtype=np.bool_)
    for k, need in enumerate(shape):
        if need > 0:
            out &= covers_array(free[:, k], need)
    return out


class ResourceError(ValueError):
    """A quantity or range that is not a valid resource."""


def check_quantity(name: str, value: object) -> float:
    """``value`` as a resource quantity: a finite number, >= 0 and <= MAX_SCALAR; a
    ResourceError names ``name`` and the problem otherwise."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ResourceError(f"{name} must be a number, got {echo(value)}")
    v = float(value)
    if math.isnan(v):
        raise ResourceError(f"{name} is NaN")
    if math.isinf(v):
        raise ResourceError(f"{name} is infinite")
    if v < 0:
        raise ResourceError(f"{name} is negative ({v:g})")
    if v > MAX_SCALAR:
        raise ResourceError(f"{name} is {v:g}, more than the limit of {MAX_SCALAR:g}")
    return v


def normalize_ranges(ranges: PortRanges | list[tuple[int, int]]) -> PortRanges:
    """Sort and merge ranges; raise on inverted or out-of-range bounds."""
    cleaned: list[tuple[int, int]] = []
    for begin, end in ranges:
        if begin > end:
            raise ResourceError(f"port range [{begin}-{end}] is inverted")
        if begin < 0 or end > 65535:
            raise ResourceError(f"port range [{begin}-{end}] is outside 0-65535")
        cleaned.append((int(begin), int(end)))
    cleaned.sort()
    merged: list[tuple[int, int]] = []
    for begin, end in cleaned:
        if merged and begin <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((begin, end))
    return tuple(merged)


def ranges_contain(outer: PortRanges, inner: PortRanges) -> bool:
    return all(any(b >= ob and e <= oe for ob, oe in outer) for b, e in inner)


def ranges_subtract(outer: PortRanges, inner: PortRanges) -> PortRanges:
    result = list(outer)
    for b, e in inner:
        nxt: list[tuple[int, int]] = []
        for ob, oe in result:
            if e < ob or b > oe:
                nxt.append((ob, oe))
                continue
            if ob < b:
                nxt.append((ob, b - 1))
            if e < oe:
                nxt.append((e + 1, oe))
        result = nxt
    return tuple(result)


def ranges_count(ranges: PortRanges) -> int:
    return sum(e - b + 1 for b, e in ranges)


@dataclass(frozen=True, slots=True)
class Resources:
    cpus: float = 0.0
    mem: float = 0.0
    disk: float = 0.0
    gpus: float = 0.0
    ports: PortRanges = field(default=())

    def __post_init__(self) -> None:
        for name in SCALARS:
            object.__setattr__(self, name, check_quantity(name, getattr(self, name)))
        object.__setattr__(self, "ports", normalize_ranges(self.ports))

    @classmethod
    def from_scalars(
        cls, values: tuple[float, ...] | list[float], ports: PortRanges = ()
    ) -> Resources:
        cpus, mem, disk, gpus = values
        return _trusted(
            max(0.0, float(cpus)),
            max(0.0, float(mem)),
            max(0.0, float(disk)),
            max(0.0, float(gpus)),
            normalize_ranges(ports) if ports else (),
        )

    @classmethod
    def offered(cls, values: Sequence[float], ports: PortRanges) -> Resources:
        """An allocator's offer: four non-negative floats and the agent's free port ranges,
        already normalized. Trusted: nothing is checked on this per-offer path."""
        return _trusted(values[0], values[1], values[2], values[3], ports)

    def scalars(self) -> tuple[float, float, float, float]:
        return (self.cpus, self.mem, self.disk, self.gpus)

    def below_granularity(self) -> list[str]:
        """The scalars asked for (more than 0) below GRANULARITY, each as ``name value``."""
        return [
            f"{name} {value:g}"
            for name, value in zip(SCALARS, self.scalars(), strict=True)
            if 0 < value < GRANULARITY
        ]

    def is_empty(self) -> bool:
        return all(v <= EPSILON for v in self.scalars()) and not self.ports

    def __add__(self, other: Resources) -> Resources:
        # Sums of valid quantities are valid: skip the checks on this hot path.
        if other.ports:
            ports = normalize_ranges(list(self.ports) + list(other.ports))
        else:
            ports = self.ports
        return _trusted(
            self.cpus + other.cpus,
            self.mem + other.mem,
            self.disk + other.disk,
            self.gpus + other.gpus,
            ports,
        )

    def __sub__(self, other: Resources) -> Resources:
        """Subtract, clamping scalar dust at zero. Callers check contains() first."""
        return _trusted(
            max(0.0, self.cpus - other.cpus),
            max(0.0, self.mem - other.mem),
            max(0.0, self.disk - other.disk),
            max(0.0, self.gpus - other.gpus),
            ranges_subtract(self.ports, other.ports) if other.ports else self.ports,
        )

    def contains(self, other: Resources) -> bool:
        return fits(self.scalars(), other.scalars()) and ranges_contain(self.ports, other.ports)

    def exceeded_by(self, other: Resources) -> list[str]:
        """Names of the resources of which ``other`` asks more than ``self`` has."""
        names = [SCALARS[k] for k in lacking(self.scalars(), other.scalars())]
        if not ranges_contain(self.ports, other.ports):
            names.append("ports")
        return names

    def __str__(self) -> str:
        parts = [f"{n}:{v:g}" for n, v in zip(SCALARS, self.scalars(), strict=True) if v]
        if self.ports:
            parts.append("ports:[" + ",".join(f"{b}-{e}" for b, e in self.ports) + "]")
        return ";".join(parts) or "(none)"


def _trusted(cpus: float, mem: float, disk: float, gpus: float, ports: PortRanges) -> Resources:
    """Build without validation, from values already known valid (sums, clamped differences,
    normalized ranges)."""
    r = _new(Resources)
    _set_cpus(r, cpus)
    _set_mem(r, mem)
    _set_disk(r, disk)
    _set_gpus(r, gpus)
    _set_ports(r, ports)
    return r


# The slots' own setters: they bypass the frozen __setattr__ like object.__setattr__ does, at
# half the cost (this runs once per offer, task and status on the master's hot paths).
_new = object.__new__
_set_cpus, _set_mem, _set_disk, _set_gpus, _set_ports = (
    Resources.__dict__[name].__set__ for name in (*SCALARS, "ports")
)


_RANGE = re.compile(r"^\s*(\d+)\s*-\s*(\d+)\s*$")
PORTS_SYNTAX = "ports:[31000-32000,33000-33100]"


def parse_resources(text: str) -> Resources:
    """Parse ``'cpus:4;mem:8192;disk:20000;gpus:0;ports:[31000-32000,33000-33100]'``: each
    resource at most once, several port ranges in one bracketed list (Mesos' syntax)."""
    values: dict[str, float] = {}
    ports: list[tuple[int, int]] | None = None
    for name, value, part in items(text, ";", ":"):
        if value is None:
            raise ResourceError(f"resource {part!r} has no ':' (expected name:value)")
        if name in values or (name == "ports" and ports is not None):
            # Silently keeping the last of `cpus:4;cpus:8` hid a typo; Mesos refuses it too.
            hint = f" (several ranges go in one list: {PORTS_SYNTAX})" if name == "ports" else ""
            raise ResourceError(f"{name} is given twice{hint}")
        if name == "ports":
            ports = _parse_ports(value)
            continue
        if name not in SCALARS:
            raise ResourceError(f"unknown resource {name!r} (known: {', '.join(SCALARS)}, ports)")
        try:
            number = float(value)
        except ValueError:
            raise ResourceError(f"{name} must be a number, got {value!r}") from None
        values[name] = check_quantity(name, number)
    return Resources(ports=tuple(ports or ()), **values)


def _parse_ports(value: str) -> list[tuple[int, int]]:
    """``[31000-32000,33000-33100]`` as ranges."""
    if (
        not (value.startswith("[") and value.endswith("]"))
        or value.count("[") != 1
        or value.count("]") != 1
    ):
        raise ResourceError(
            f"ports must be one bracketed list of ranges, like {PORTS_SYNTAX}; got {value!r}"
        )
    ranges = []
    for chunk in value[1:-1].split(","):
        if not chunk.strip():
            continue
        m = _RANGE.match(chunk)
        if not m:
            raise ResourceError(
                f"port range {chunk.strip()!r} must look like 31000-32000 (several: {PORTS_SYNTAX})"
            )
        ranges.append((int(m.group(1)), int(m.group(2))))
    return ranges
