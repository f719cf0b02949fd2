"""The queue configuration of the job service, Kueue's model (docs/jobs.md): resource flavors,
cluster queues with nominal quotas per flavor and resource, cohorts that lend and borrow, and
local queues that jobs name.

The document (YAML or JSON; ``QueueConfig.from_json`` checks the data, the service reads the
file)::

    flavors:                       # kinds of agents; default: one flavor "default", any agent
      - name: default
      - name: a100
        attributes: {gpu-sku: a100}          # its agents' attributes (a job's constraints)
        tolerations: ["gpu-sku=a100:NoSchedule"]   # what its jobs tolerate to land there
    cluster_queues:
      - name: team-a
        cohort: ml                 # queues of one cohort lend each other unused quota
        queueing_strategy: BestEffortFIFO    # or StrictFIFO
        preemption:
          reclaim_within_cohort: Any         # Never | LowerPriority | Any
          within_cluster_queue: LowerPriority   # Never | LowerPriority
        resources:                 # per flavor, in the order flavors are tried
          default: {cpus: 32, mem: 65536}
          a100:
            gpus: {nominal: 8, borrowing_limit: 4, lending_limit: 8}
    local_queues:                  # what jobs name in ``queue``; each cluster queue also
      - {name: team-a-train, cluster_queue: team-a}   # has one of its own name

A number is a nominal quota with no limits. A queue counts only the resources it names in some
flavor; a resource it names in one flavor and not another has no quota (0) in the other.
``borrowing_limit`` (default: none) bounds what it may use beyond its nominal quota from its
cohort; ``lending_limit`` (default: all of it) bounds what of its unused nominal quota the
cohort may use. Every mistake is a ``QueueConfigError`` naming the queue and field.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

# What a queue may count, in the order of every vector in this package.
RESOURCES: tuple[str, ...] = ("cpus", "mem", "disk", "gpus")
UNITS = {"cpus": "cpus", "mem": "MiB mem", "disk": "MiB disk", "gpus": "gpus"}
Vector = tuple[float, float, float, float]
ZERO: Vector = (0.0, 0.0, 0.0, 0.0)
DEFAULT_FLAVOR = "default"
# The master's built-in priority classes (corral/priority.py), by value.
DEFAULT_PRIORITIES = {"system": 2_000_000_000, "serving": 1000, "default": 0, "batch": -100}
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")


class QueueConfigError(ValueError):
    """A queue configuration the service cannot use; the message names where."""


class QueueingStrategy(StrEnum):
    # The head waits until it fits; nothing behind it is admitted before it (Kueue's
    # StrictFIFO).
    STRICT_FIFO = "StrictFIFO"
    # A head that does not fit does not block smaller jobs behind it (BestEffortFIFO).
    BEST_EFFORT_FIFO = "BestEffortFIFO"


class ReclaimPolicy(StrEnum):
    NEVER = "Never"
    LOWER_PRIORITY = "LowerPriority"  # only borrowing jobs of lower priority
    ANY = "Any"  # any job of a queue that borrows


class WithinQueuePolicy(StrEnum):
    NEVER = "Never"
    LOWER_PRIORITY = "LowerPriority"


@dataclass(frozen=True, slots=True)
class Quota:
    """One resource of one flavor of one queue."""

    nominal: float
    borrowing_limit: float = math.inf  # beyond nominal, from the cohort
    lending_limit: float = math.inf  # of its nominal, to the cohort (inf: all of it)

    @property
    def lendable(self) -> float:
        return min(self.nominal, self.lending_limit)

    @property
    def guaranteed(self) -> float:
        """What the cohort can never use of it: its nominal quota less what it lends."""
        return self.nominal - self.lendable


NO_QUOTA = Quota(0.0, borrowing_limit=0.0, lending_limit=0.0)
UNCOUNTED = Quota(math.inf)  # a resource the queue does not name


@dataclass(frozen=True, slots=True)
class Flavor:
    name: str
    attributes: tuple[tuple[str, str], ...] = ()
    tolerations: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class FlavorQuotas:
    flavor: str
    quotas: tuple[Quota, Quota, Quota, Quota]  # in RESOURCES' order


@dataclass(frozen=True, slots=True)
class ClusterQueue:
    name: str
    flavors: tuple[FlavorQuotas, ...]
    cohort: str = ""
    strategy: QueueingStrategy = QueueingStrategy.BEST_EFFORT_FIFO
    reclaim_within_cohort: ReclaimPolicy = ReclaimPolicy.ANY
    within_cluster_queue: WithinQueuePolicy = WithinQueuePolicy.NEVER

    def quotas(self, flavor: str) -> tuple[Quota, Quota, Quota, Quota] | None:
        for f in self.flavors:
            if f.flavor == flavor:
                return f.quotas
        return None


@dataclass(frozen=True, slots=True)
class LocalQueue:
    name: str
    cluster_queue: str


@dataclass(frozen=True)
class QueueConfig:
    flavors: dict[str, Flavor]
    cluster_queues: dict[str, ClusterQueue]
    local_queues: dict[str, LocalQueue]
    cohorts: dict[str, tuple[str, ...]] = field(default_factory=dict)  # cohort -> its queues
    # A job's order in its queue: its priority class's value (the master's defaults unless
    # the configuration names others, as Kueue's WorkloadPriorityClass stands apart).
    priority_classes: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_PRIORITIES))

    def priority(self, priority_class: str) -> int | None:
        return self.priority_classes.get(priority_class or "default")

    def cluster_queue_of(self, local_queue: str) -> ClusterQueue | None:
        lq = self.local_queues.get(local_queue)
        return None if lq is None else self.cluster_queues[lq.cluster_queue]

    def members(self, cq: ClusterQueue) -> tuple[str, ...]:
        """The queues that share quota with ``cq`` (itself included)."""
        return self.cohorts.get(cq.cohort, (cq.name,)) if cq.cohort else (cq.name,)

    @classmethod
    def from_json(cls, data: Any) -> QueueConfig:
        if not isinstance(data, Mapping):
            raise QueueConfigError("the queue configuration must be a mapping")
        _known(
            data,
            {"flavors", "cluster_queues", "local_queues", "priority_classes"},
            "the queue configuration",
        )
        priorities = dict(DEFAULT_PRIORITIES)
        raw_pc = data.get("priority_classes", {})
        if not isinstance(raw_pc, Mapping):
            raise QueueConfigError("priority_classes must map class names to values")
        for pc, value in raw_pc.items():
            if isinstance(value, bool) or not isinstance(value, int) or abs(value) > 2_000_000_000:
                raise QueueConfigError(
                    f"priority_classes.{pc}: must be a whole number within +-2e9, got {value!r}"
                )
            priorities[_name(pc, "priority_classes")] = value
        flavors = _flavors(data.get("flavors"))
        raw_cqs = data.get("cluster_queues", [])
        if not isinstance(raw_cqs, list):
            raise QueueConfigError("cluster_queues must be a list")
        cqs: dict[str, ClusterQueue] = {}
        for i, raw in enumerate(raw_cqs):
            cq = _cluster_queue(raw, i, flavors)
            if cq.name in cqs:
                raise QueueConfigError(f"cluster queue {cq.name!r} is named twice")
            cqs[cq.name] = cq
        locals_: dict[str, LocalQueue] = {n: LocalQueue(n, n) for n in cqs}
        raw_lqs = data.get("local_queues", [])
        if not isinstance(raw_lqs, list):
            raise QueueConfigError("local_queues must be a list")
        for i, raw in enumerate(raw_lqs):
            where = f"local_queues[{i}]"
            raw = _section(raw, {"name", "cluster_queue"}, where)
            name = _name(raw.get("name"), f"{where}.name")
            target = raw.get("cluster_queue")
            if target not in cqs:
                raise QueueConfigError(
                    f"local queue {name!r}: cluster_queue {target!r} is not a cluster queue"
                    f" (known: {', '.join(sorted(cqs)) or 'none'})"
                )
            if name in locals_ and locals_[name].cluster_queue != target:
                raise QueueConfigError(f"local queue {name!r} is named twice")
            locals_[name] = LocalQueue(name, target)
        cohorts: dict[str, list[str]] = {}
        for cq in cqs.values():
            if cq.cohort:
                cohorts.setdefault(cq.cohort, []).append(cq.name)
        return cls(flavors, cqs, locals_, {k: tuple(v) for k, v in cohorts.items()}, priorities)

    def to_json(self) -> dict[str, Any]:
        """The configuration as written (defaults spelled out): what ``GET /v1/queues`` shows."""
        return {
            "flavors": [
                {
                    "name": f.name,
                    "attributes": dict(f.attributes),
                    "tolerations": list(f.tolerations),
                }
                for f in self.flavors.values()
            ],
            "cluster_queues": [
                {
                    "name": cq.name,
                    "cohort": cq.cohort,
                    "queueing_strategy": cq.strategy.value,
                    "preemption": {
                        "reclaim_within_cohort": cq.reclaim_within_cohort.value,
                        "within_cluster_queue": cq.within_cluster_queue.value,
                    },
                    "resources": {
                        fq.flavor: {
                            r: _quota_json(q)
                            for r, q in zip(RESOURCES, fq.quotas, strict=True)
                            if q is not UNCOUNTED
                        }
                        for fq in cq.flavors
                    },
                }
                for cq in self.cluster_queues.values()
            ],
            "local_queues": [
                {"name": lq.name, "cluster_queue": lq.cluster_queue}
                for lq in self.local_queues.values()
            ],
            "priority_classes": dict(self.priority_classes),
        }


def single_queue(name: str = "default", **quota: float) -> QueueConfig:
    """A configuration of one queue of the default flavor (tests, and the service without a
    ``--queues`` file: one queue ``default`` that counts nothing, so every job is admitted)."""
    return QueueConfig.from_json(
        {"cluster_queues": [{"name": name, "resources": {DEFAULT_FLAVOR: dict(quota)}}]}
    )


def _quota_json(q: Quota) -> dict[str, float | None]:
    return {
        "nominal": q.nominal,
        "borrowing_limit": None if math.isinf(q.borrowing_limit) else q.borrowing_limit,
        "lending_limit": None if math.isinf(q.lending_limit) else q.lending_limit,
    }


def _known(data: Mapping[str, Any], keys: set[str], where: str) -> None:
    unknown = sorted(set(data) - keys)
    if unknown:
        raise QueueConfigError(
            f"{where}: unknown field {unknown[0]!r} (fields: {', '.join(sorted(keys))})"
        )


def _section(data: Any, keys: set[str], where: str) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise QueueConfigError(f"{where} must be a mapping")
    _known(data, keys, where)
    return data


def _name(value: Any, where: str) -> str:
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        raise QueueConfigError(f"{where} must be a name (letters, digits, . _ -), got {value!r}")
    return value


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise QueueConfigError(f"{where} must be a number, got {value!r}")
    if math.isnan(value) or math.isinf(value) or value < 0:
        raise QueueConfigError(f"{where} must be a finite number >= 0, got {value!r}")
    return float(value)


def _flavors(raw: Any) -> dict[str, Flavor]:
    if raw is None:
        return {DEFAULT_FLAVOR: Flavor(DEFAULT_FLAVOR)}
    if not isinstance(raw, list) or not raw:
        raise QueueConfigError("flavors must be a non-empty list")
    out: dict[str, Flavor] = {}
    for i, item in enumerate(raw):
        where = f"flavors[{i}]"
        item = _section(item, {"name", "attributes", "tolerations"}, where)
        name = _name(item.get("name"), f"{where}.name")
        where = f"flavor {name!r}"
        attrs = item.get("attributes", {})
        if not isinstance(attrs, Mapping) or not all(
            isinstance(k, str) and k and isinstance(v, str) and v for k, v in attrs.items()
        ):
            raise QueueConfigError(f"{where}.attributes must map attribute names to values")
        tolerations = item.get("tolerations", [])
        if not isinstance(tolerations, list) or not all(
            isinstance(t, str) and t for t in tolerations
        ):
            raise QueueConfigError(f"{where}.tolerations must be a list of strings")
        if name in out:
            raise QueueConfigError(f"flavor {name!r} is named twice")
        out[name] = Flavor(name, tuple(sorted(attrs.items())), tuple(tolerations))
    return out


def _cluster_queue(raw: Any, i: int, flavors: dict[str, Flavor]) -> ClusterQueue:
    keys = {"name", "cohort", "queueing_strategy", "preemption", "resources"}
    raw = _section(raw, keys, f"cluster_queues[{i}]")
    name = _name(raw.get("name"), f"cluster_queues[{i}].name")
    where = f"cluster queue {name!r}"
    cohort = raw.get("cohort", "")
    if cohort:
        cohort = _name(cohort, f"{where}.cohort")
    try:
        strategy = QueueingStrategy(raw.get("queueing_strategy", "BestEffortFIFO"))
    except ValueError:
        raise QueueConfigError(
            f"{where}.queueing_strategy must be StrictFIFO or BestEffortFIFO, "
            f"got {raw.get('queueing_strategy')!r}"
        ) from None
    pre = _section(
        raw.get("preemption", {}),
        {"reclaim_within_cohort", "within_cluster_queue"},
        f"{where}.preemption",
    )
    try:
        reclaim = ReclaimPolicy(pre.get("reclaim_within_cohort", "Any"))
        within = WithinQueuePolicy(pre.get("within_cluster_queue", "Never"))
    except ValueError as err:
        raise QueueConfigError(f"{where}.preemption: {err}") from None
    resources = raw.get("resources")
    if not isinstance(resources, Mapping) or not resources:
        raise QueueConfigError(f"{where}.resources must map flavors to quotas")
    named: set[str] = set()
    parsed: list[tuple[str, dict[str, Quota]]] = []
    for flavor, quotas in resources.items():
        if flavor not in flavors:
            raise QueueConfigError(
                f"{where}.resources: unknown flavor {flavor!r} "
                f"(known: {', '.join(sorted(flavors))})"
            )
        fwhere = f"{where}.resources.{flavor}"
        if not isinstance(quotas, Mapping):
            raise QueueConfigError(f"{fwhere} must map resources to quotas")
        _known(quotas, set(RESOURCES), fwhere)
        parsed.append((flavor, {r: _quota(q, f"{fwhere}.{r}") for r, q in quotas.items()}))
        named.update(quotas)
    if cohort == "":
        for _, quotas in parsed:
            for r, q in quotas.items():
                if q.borrowing_limit != math.inf or q.lending_limit != math.inf:
                    raise QueueConfigError(
                        f"{where}.resources: {r}: borrowing_limit and lending_limit need a cohort"
                    )
    fqs = tuple(
        FlavorQuotas(
            flavor,
            tuple(  # type: ignore[arg-type]
                quotas.get(r, NO_QUOTA) if r in named else UNCOUNTED for r in RESOURCES
            ),
        )
        for flavor, quotas in parsed
    )
    return ClusterQueue(name, fqs, cohort, strategy, reclaim, within)


def _quota(raw: Any, where: str) -> Quota:
    if not isinstance(raw, Mapping):
        return Quota(_number(raw, where))
    _known(raw, {"nominal", "borrowing_limit", "lending_limit"}, where)
    if "nominal" not in raw:
        raise QueueConfigError(f"{where}.nominal: required")
    nominal = _number(raw["nominal"], f"{where}.nominal")
    borrow = raw.get("borrowing_limit")
    lend = raw.get("lending_limit")
    q = Quota(
        nominal,
        math.inf if borrow is None else _number(borrow, f"{where}.borrowing_limit"),
        math.inf if lend is None else _number(lend, f"{where}.lending_limit"),
    )
    if q.lending_limit != math.inf and q.lending_limit > nominal:
        raise QueueConfigError(
            f"{where}.lending_limit {q.lending_limit:g} exceeds the nominal quota {nominal:g}"
        )
    return q
