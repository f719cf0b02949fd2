"""The numpy allocator: the rules of ``reference.py`` over dense arrays.

Ids become row numbers at the boundary (``RowIndex``). Agents are rows and frameworks columns of
the [A, F] masks, so one agent's eligibility over all frameworks is one contiguous row.

``DrfAllocator`` holds the state (the arrays, the masks, the charge and reservation books, the
roles) and implements the ``Allocator`` protocol: adding and removing agents, frameworks and
roles, and the DRF keys, are here; the rest is a module each, taking the allocator first:
``cycle`` (the allocation cycle and its walks: ``fastpath``, ``general_walk``), ``quota`` (a
role's quota arithmetic and an agent's offer), ``charge_moves`` (charges and returns),
``refuse_filters``, ``rooms`` (``room``, ``has_room``) and ``explain``. ``kernel``: whether the
cycle's loops run compiled (``"numba"``) or as their own source (``"numpy"``, jit.py).

Why a cycle is cheap: ``count_ok[a]`` (active frameworks neither blocked by placement nor
filtered on agent a) is maintained on every filter/suppress/revive/add/remove, so a cycle first
drops, with a few vector operations over the agents, every agent that has nothing offerable or
nobody to offer it to (``cycle.py``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import cast

import numpy as np
import numpy.typing as npt

from corral.master.allocator import (
    charge_moves,
    cycle,
    drf,
    eligibility,
    fastpath_kernel,
    general_walk,
    order,
    quota,
    refuse_filters,
    rooms,
    rooms_compiled,
    rules,
)
from corral.master.allocator.arrays import F64, INF, RoleKeys, Vec
from corral.master.allocator.arrays import KERNELS as KERNELS  # where tests and bench look
from corral.master.allocator.arrays import Kernel as Kernel
from corral.master.allocator.charge_table import ChargeBook
from corral.master.allocator.charge_table import warm as warm_charges
from corral.master.allocator.explain import explain
from corral.master.allocator.fit_cache import FitCache
from corral.master.allocator.growable import RowIndex, grow_rows
from corral.master.allocator.interface import (
    Explanation,
    HeldBack,
    Plan,
    PlanSource,
    Room,
    Scalars,
)
from corral.master.allocator.masks import filters as filter_matrix
from corral.master.allocator.masks.filters import FilterMatrix
from corral.master.allocator.masks.placement import PlacementMask
from corral.master.allocator.options import (
    REASON_GPU,
    AllocatorOptions,
    check_scalars,
    check_weight,
)
from corral.master.allocator.reservations import ReservationBook
from corral.master.allocator.rules import RuleOptions, suppression
from corral.master.allocator.rules import draining as draining_rule
from corral.placement import AttributeConstraint, Taint, Toleration

_START = 64


class DrfAllocator:
    """Hierarchical weighted DRF over numpy arrays; decisions identical to ReferenceAllocator."""

    def __init__(self, options: AllocatorOptions | None = None, kernel: Kernel = "numba") -> None:
        if kernel not in KERNELS:
            raise ValueError(f"unknown allocator kernel {kernel!r} (known: {', '.join(KERNELS)})")
        warm_charges()
        filter_matrix.warm()
        rooms_compiled.warm()
        if kernel == "numba":  # "numpy" runs the cycle's kernels as their own source
            cycle.warm()
            fastpath_kernel.warm()
            general_walk.warm(DrfAllocator)
        self.kernel = kernel
        self.options = options or AllocatorOptions()
        self._min = self.options.min_rows()
        self._min_array = np.asarray(self._min, dtype=np.float64).reshape(-1, 4)
        self._fair = self.options.fair_indices()
        self._agents = RowIndex()
        self._frameworks = RowIndex()
        # agents (rows)
        self.total = np.zeros((_START, 4))
        self.capacity = np.zeros((_START, 4))  # unreserved capacity
        self.used = np.zeros((_START, 4))  # unreserved used
        self.agent_alive = np.zeros(_START, dtype=np.bool_)
        # The dynamic rules' conditions by name, a boolean per row (rules/base.py): draining
        # is one of the agents', suppression one of the frameworks'.
        self._agent_conditions: dict[str, npt.NDArray[np.bool_]] = {}
        self._framework_conditions: dict[str, npt.NDArray[np.bool_]] = {}
        self.agent_seq = np.zeros(_START, dtype=np.int64)
        self.count_ok = np.zeros(_START, dtype=np.int64)
        # frameworks (columns)
        self.alloc = np.zeros((_START, 4))
        self.fw_role = np.zeros(_START, dtype=np.intp)
        self.fw_count = np.zeros(_START, dtype=np.int64)  # allocations received (order.py)
        self.fw_priority = np.zeros(_START, dtype=np.int64)  # order.py's key 1
        self.fw_alive = np.zeros(_START, dtype=np.bool_)
        self.fw_active = np.zeros(_START, dtype=np.bool_)  # alive, not suppressed (count_ok)
        self.charges = ChargeBook()
        # roles
        self.role_names: list[str] = []
        self._role_index: dict[str, int] = {}
        self.weight: list[float] = []
        self.guarantee: list[Vec] = []
        self._guaranteed = False  # some role has a guarantee (set_quota)
        self.limit: list[Vec] = []
        self.role_alloc = np.zeros((0, 4))
        self.role_count = np.zeros(0, dtype=np.int64)  # allocations received (order.py)
        # masks
        self.filters = FilterMatrix(_START, _START)
        self.placement = PlacementMask(
            _START, _START, filter_gpus=self.options.filter_gpu_resources
        )
        self.reservations = ReservationBook(_START)
        self.cluster = np.zeros(4)
        self._seq = 0
        self._agent_order: npt.NDArray[np.intp] | None = None
        self._agents_by_id: npt.NDArray[np.intp] | None = None  # live rows in id order (room)
        self._ids_by_id: npt.NDArray[np.object_] = np.zeros(0, dtype=object)  # and their ids
        # Agents where one task of a shape fits, per (shape, role), kept while no free amount
        # changes: the waiting gangs of one tick (nothing charged between them) share one test.
        self._fit_cache = FitCache()
        self._framework_ranks: npt.NDArray[np.int64] | None = None  # by id, see order.py
        self._last_plan_frameworks = np.zeros(0, dtype=np.intp)  # rows offered last cycle
        self.general_walks = 0  # cycles walked by the compiled general walk (tests read it)

    # ---- sizing -------------------------------------------------------------------------------

    def reserve(self, agents: int, frameworks: int) -> None:
        """Rows for ``agents`` agents and ``frameworks`` frameworks at once. Frameworks
        recovered before their agents re-register made every doubling of the agent rows copy
        the filter and placement matrices at full width (5.5 % of a leader taking over 50,000
        agents and 1,000 frameworks, issue #48)."""
        self._ensure(agents, frameworks)

    def _ensure(self, agents: int = 0, frameworks: int = 0) -> None:
        a, f = max(self._agents.size, agents), max(self._frameworks.size, frameworks)
        for name, fill in (("total", 0.0), ("capacity", 0.0), ("used", 0.0)):
            setattr(self, name, grow_rows(getattr(self, name), a, fill))
        self.agent_alive = grow_rows(self.agent_alive, a, False)
        for conditions, size in ((self._agent_conditions, a), (self._framework_conditions, f)):
            for name, rows in conditions.items():
                conditions[name] = grow_rows(rows, size, False)
        self.agent_seq = grow_rows(self.agent_seq, a, 0)
        self.count_ok = grow_rows(self.count_ok, a, 0)
        self.alloc = grow_rows(self.alloc, f, 0.0)
        self.fw_role = grow_rows(self.fw_role, f, 0)
        self.fw_count = grow_rows(self.fw_count, f, 0)
        self.fw_priority = grow_rows(self.fw_priority, f, 0)
        for name in ("fw_alive", "fw_active"):
            setattr(self, name, grow_rows(getattr(self, name), f, False))
        self.filters.grow(self.total.shape[0], self.alloc.shape[0])
        self.placement.grow(self.total.shape[0], self.alloc.shape[0])
        self.reservations.grow(self.total.shape[0])

    def state_bytes(self) -> int:
        """Bytes held in the allocator's arrays (the benchmark reports it)."""
        arrays = [v for v in vars(self).values() if isinstance(v, np.ndarray)]
        for holder in (self.filters, self.placement, self.reservations, self.charges):
            arrays += [v for v in vars(holder).values() if isinstance(v, np.ndarray)]
        return int(sum(a.nbytes for a in arrays))

    def _role(self, name: str) -> int:
        idx = self._role_index.get(name)
        if idx is None:
            idx = self._role_index[name] = len(self.role_names)
            self.role_names.append(name)
            self.weight.append(1.0)
            self.guarantee.append([0.0] * 4)
            self.limit.append([INF] * 4)
            self.role_alloc = np.vstack([self.role_alloc, np.zeros((1, 4))])
            self.role_count = np.append(self.role_count, np.int64(0))
        return idx

    def _live_frameworks(self) -> npt.NDArray[np.intp]:
        return np.flatnonzero(self.fw_alive[: self._frameworks.size])

    def _live_agents(self) -> npt.NDArray[np.intp]:
        return np.flatnonzero(self.agent_alive[: self._agents.size])

    def _column_delta(self, f: int, sign: int) -> None:
        """Add (or remove) framework f's contribution to ``count_ok``."""
        n = self._agents.size
        col = eligibility.column(self, f, n)
        self.count_ok[:n] += sign * col.astype(np.int64)

    def _recount(self) -> None:
        n, m = self._agents.size, self._frameworks.size
        ok = eligibility.matrix(self, n, m)
        self.count_ok[:n] = ok.sum(axis=1)

    # ---- agents -------------------------------------------------------------------------------

    def add_agent(
        self,
        agent_id: str,
        total: Scalars,
        attributes: Mapping[str, str],
        taints: Sequence[Taint],
        reservations: Mapping[str, Scalars] | None = None,
    ) -> None:
        if agent_id in self._agents.rows:
            raise ValueError(f"agent {agent_id!r} is already known")
        tot = list(check_scalars(f"agent {agent_id} total", total))
        reserved: dict[str, Vec] = {}
        summed = [0.0] * 4
        for role, amounts in (reservations or {}).items():
            vec = list(check_scalars(f"agent {agent_id} reservation for {role}", amounts))
            reserved[role] = vec
            summed = [s + x for s, x in zip(summed, vec, strict=True)]
        if any(s > t for s, t in zip(summed, tot, strict=True)):
            raise ValueError(f"agent {agent_id}: reservations exceed the total")
        by_role = {self._role(role): vec for role, vec in reserved.items()}
        cap = list(tot)
        for vec in reserved.values():
            cap = [c - x for c, x in zip(cap, vec, strict=True)]
        a = self._agents.add(agent_id)
        self._ensure()
        self.total[a], self.capacity[a], self.used[a] = tot, cap, 0.0
        self.agent_alive[a] = True
        for rows in self._agent_conditions.values():  # a row may be a removed agent's
            rows[a] = False
        self.agent_seq[a] = self._seq
        self._seq += 1
        self.cluster += np.asarray(tot)
        self.filters.clear_agent(a)
        self.reservations.set_agent(a, by_role)
        self.placement.set_agent(
            a,
            attributes,
            taints,
            self._live_frameworks(),
            has_gpus=tot[3] > 0,
            capacity=tuple(tot),
        )
        m = self._frameworks.size
        row = eligibility.row(self, a, m)  # a new agent: no filter holds yet
        self.count_ok[a] = int(np.count_nonzero(row))
        self._agent_order = None
        self._agents_by_id = None
        self._fit_cache.clear()

    def remove_agent(self, agent_id: str) -> None:
        a = self._agent(agent_id)
        frameworks, charged = self.charges.of_agent(a)
        for f, charge in zip(frameworks.tolist(), charged, strict=True):
            self.alloc[f] -= charge
            self.role_alloc[self.fw_role[f]] -= charge
        self.charges.drop(frameworks, np.full(len(frameworks), a, dtype=np.int64))
        self._agents.remove(agent_id)
        self.cluster -= self.total[a]
        self.agent_alive[a] = False
        self.count_ok[a] = 0
        self.filters.clear_agent(a)
        self.reservations.drop_agent(a)
        self._agent_order = None
        self._agents_by_id = None
        self._fit_cache.clear()

    def set_agent_draining(self, agent_id: str, draining: bool) -> None:
        self.set_agent_condition(agent_id, draining_rule.CONDITION, draining)

    def set_agent_condition(self, agent_id: str, name: str, on: bool) -> None:
        self.agent_condition(name)[self._agent(agent_id)] = on

    def agent_condition(self, name: str) -> npt.NDArray[np.bool_]:
        """Where the named agent condition is set, by agent row (rules/base.py)."""
        rows = self._agent_conditions.get(name)
        if rows is None:
            rows = self._agent_conditions[name] = np.zeros(len(self.agent_alive), dtype=np.bool_)
        return rows

    def framework_condition(self, name: str) -> npt.NDArray[np.bool_]:
        """Where the named framework condition is set, by framework row (rules/base.py)."""
        rows = self._framework_conditions.get(name)
        if rows is None:
            rows = self._framework_conditions[name] = np.zeros(len(self.fw_alive), dtype=np.bool_)
        return rows

    def set_agent_pressure(self, agent_id: str, under_pressure: bool) -> None:
        a = self._agent(agent_id)
        if self.placement.set_agent_pressure(a, under_pressure, self._live_frameworks()):
            self.count_ok[a] = int(eligibility.row(self, a, self._frameworks.size).sum())
            self._fit_cache.clear()

    def set_besteffort(self, framework_id: str, besteffort_only: bool) -> None:
        f = self._framework(framework_id)
        active = bool(self.fw_active[f])
        if active:
            self._column_delta(f, -1)
        changed = self.placement.set_framework_besteffort(f, besteffort_only, self._live_agents())
        if active:
            self._column_delta(f, +1)
        if changed:
            self._fit_cache.clear()

    def set_demand_shapes(
        self, framework_id: str, shapes: tuple[tuple[float, ...], ...] | None
    ) -> None:
        f = self._framework(framework_id)
        facts = self.placement.framework_sigs[int(self.placement.framework_sig[f])]
        if facts.demand_shapes == shapes:
            return  # the common call: nothing moved
        active = bool(self.fw_active[f])
        if active:
            self._column_delta(f, -1)
        self.placement.set_framework_shapes(f, shapes, self._live_agents())
        if active:
            self._column_delta(f, +1)
        self._fit_cache.clear()

    @property
    def rule_options(self) -> RuleOptions:
        return self.placement.options

    def offerable_agents(self, now: float) -> npt.NDArray[np.bool_]:
        """Agents whose resources may be offered at ``now``, by row: alive and closed by no
        dynamic rule of the agent's scope (draining, and any registered)."""
        n = self._agents.size
        return np.asarray(self.agent_alive[:n] & ~eligibility.closed_agents(self, now))

    # ---- frameworks and roles -----------------------------------------------------------------

    def add_framework(
        self,
        framework_id: str,
        role: str,
        tolerations: Sequence[Toleration] = (),
        constraints: Sequence[AttributeConstraint] = (),
        gpu_resources: bool = False,
    ) -> None:
        if framework_id in self._frameworks.rows:
            raise ValueError(f"framework {framework_id!r} is already known")
        r = self._role(role)
        f = self._frameworks.add(framework_id)
        self._ensure()
        self.alloc[f] = 0.0
        self.fw_role[f], self.fw_count[f], self.fw_priority[f] = r, 0, 0
        self._framework_ranks = None
        self.fw_alive[f], self.fw_active[f] = True, True
        for rows in self._framework_conditions.values():  # a row may be a removed framework's
            rows[f] = False
        # Its filter column holds none: columns grow clean, and remove_framework clears the
        # column of the framework it removes (three passes of a column spared: at 50,000
        # agents ~1.3 ms of each subscription).
        self.placement.set_framework(
            f, tolerations, constraints, self._live_agents(), gpu_capable=gpu_resources, role=role
        )
        self._column_delta(f, +1)

    def remove_framework(self, framework_id: str) -> None:
        f = self._framework(framework_id)
        agents, charged = self.charges.of_framework(f)
        charge_moves.recover_rows(self, np.full(len(agents), f, dtype=np.intp), agents, charged)
        if self.fw_active[f]:
            self._column_delta(f, -1)
        self.filters.clear_framework(f)
        self._frameworks.remove(framework_id)
        self._framework_ranks = None
        self.fw_alive[f] = self.fw_active[f] = False
        self._last_plan_frameworks = self._last_plan_frameworks[self._last_plan_frameworks != f]

    def set_suppressed(self, framework_id: str, suppressed: bool) -> None:
        f = self._framework(framework_id)
        rows = self.framework_condition(suppression.CONDITION)
        if bool(rows[f]) == suppressed:
            return
        rows[f] = suppressed
        # Suppression's condition also keeps fw_active and so count_ok (the cycle's index of
        # agents someone may be offered, exact for placement, filters and suppression).
        self.fw_active[f] = not suppressed
        self._column_delta(f, -1 if suppressed else +1)

    def set_framework_condition(self, framework_id: str, name: str, on: bool) -> None:
        if name == suppression.CONDITION:
            self.set_suppressed(framework_id, on)
            return
        self.framework_condition(name)[self._framework(framework_id)] = on

    def set_priority(self, framework_id: str, priority: int) -> None:
        f = self._framework(framework_id)
        self.fw_priority[f] = order.check_priority(framework_id, priority)

    def set_weight(self, role: str, weight: float) -> None:
        w = check_weight(role, weight)
        self.weight[self._role(role)] = w

    def set_quota(self, role: str, guarantee: Scalars | None, limit: Scalars | None) -> None:
        g = (
            [0.0] * 4
            if guarantee is None
            else list(check_scalars(f"guarantee of {role}", guarantee))
        )
        lim = [INF] * 4 if limit is None else list(check_scalars(f"limit of {role}", limit, True))
        if any(a > b for a, b in zip(g, lim, strict=True)):
            raise ValueError(f"quota of role {role!r}: guarantee exceeds limit")
        r = self._role(role)
        self.guarantee[r], self.limit[r] = g, lim
        self._guaranteed = any(x > 0 for vec in self.guarantee for x in vec)

    # ---- charges and filters ------------------------------------------------------------------

    def allocate(self, framework_id: str, agent_id: str, scalars: Scalars) -> None:
        f, a = self._framework(framework_id), self._agent(agent_id)
        charge_moves.charge(self, f, a, list(check_scalars("allocate", scalars)))

    def recover(self, framework_id: str, agent_id: str, scalars: Scalars) -> None:
        self.recover_many([(framework_id, agent_id, scalars)])

    def recover_many(self, returns: Sequence[tuple[str, str, Sequence[float]]]) -> None:
        charge_moves.recover_many(self, returns)

    def recover_handles(
        self, source: PlanSource, handles: npt.ArrayLike, scalars: npt.ArrayLike
    ) -> None:
        charge_moves.recover_handles(self, source, handles, scalars)

    def _free_for(self, a: int, role: int) -> F64:
        """Agent row a's free resources for ``role``: unreserved plus its reservation's."""
        free: F64 = np.maximum(self.capacity[a] - self.used[a], 0.0)
        if a in self.reservations.by_agent:
            free = free + np.asarray(self.reservations.free(a, role))
        return free

    def _unreserved_free(self, rows: npt.NDArray[np.intp] | slice) -> F64:
        return np.maximum(self.capacity[rows] - self.used[rows], 0.0)

    def add_filter(
        self,
        framework_id: str,
        agent_id: str,
        expires_at: float,
        refused: Sequence[float] | None = None,
    ) -> None:
        refuse_filters.add(self, framework_id, agent_id, expires_at, refused)

    def add_filters(
        self,
        framework_id: str,
        agent_ids: Sequence[str],
        expires_at: float,
        refused: Sequence[Sequence[float]] | None = None,
    ) -> None:
        """``add_filter`` for many agents at once (a framework declining a batch of offers);
        ``refused[i]`` is what was refused of ``agent_ids[i]`` (None: everything)."""
        refuse_filters.add_many(self, framework_id, agent_ids, expires_at, refused)

    def clear_filters(self, framework_id: str) -> None:
        refuse_filters.clear(self, self._framework(framework_id))

    def charged(self, framework_id: str, agent_id: str) -> Scalars:
        return charge_moves.charged(self, framework_id, agent_id)

    # ---- the cycle ----------------------------------------------------------------------------

    def cycle(self, now: float, seed: int, cpus: float = math.inf) -> Plan:
        return cycle.run(self, now, seed, cpus)

    def last_offered(self, f: int) -> int:
        """Agents offered to framework row f in the last cycle (explain)."""
        return int(np.count_nonzero(self._last_plan_frameworks == f))

    # ---- DRF keys -----------------------------------------------------------------------------

    def framework_ranks(self) -> npt.NDArray[np.int64]:
        """Each framework row's rank by id (order.py's last key); dead rows rank last."""
        if self._framework_ranks is None:
            self._framework_ranks = order.name_ranks(self._frameworks.table())
        return self._framework_ranks

    def rank(
        self, frameworks: npt.NDArray[np.intp], fkey: F64, role_keys: RoleKeys, soft: int = -1
    ) -> npt.NDArray[np.intp]:
        """``frameworks`` in DRF order (order.py), on agent row ``soft`` if it has
        PreferNoSchedule taints."""
        tier, rkey, rrank = role_keys
        return order.rank(
            frameworks,
            prefers_not=None if soft < 0 else self.placement.prefer_not[soft, frameworks],
            role_of=self.fw_role,
            role_tier=tier,
            role_key=rkey,
            role_count=self.role_count,
            role_rank=rrank,
            share=fkey,
            count=self.fw_count,
            framework_rank=self.framework_ranks(),
            priority=self.fw_priority,
        )

    def role_keys(self) -> RoleKeys:
        """(tier, key, name rank) per role: tier 0 = unmet guarantee, served first."""
        cols = drf.fair_columns(self.cluster, self._fair)
        n = len(self.role_names)
        tier = np.asarray(
            [0 if any(u > 0 for u in quota.unmet(self, r)) else 1 for r in range(n)], dtype=np.int64
        )
        key = drf.dominant_shares(self.role_alloc, self.cluster, cols) / np.asarray(self.weight)
        return tier, key, order.name_ranks(self.role_names)

    # ---- explain ------------------------------------------------------------------------------

    def room(self, framework_id: str, now: float, shape: Scalars, want: int | None = None) -> Room:
        return rooms.room(self, self._framework(framework_id), now, shape, want)

    def held_back(self, framework_id: str, now: float) -> dict[str, str]:
        return self.held_back_masks(framework_id, now).as_dict()

    def held_back_masks(self, framework_id: str, now: float) -> HeldBack:
        f = self._framework(framework_id)
        eligibility.sweep(self, now)
        rows, ids = rooms.by_id(self)
        taken = np.zeros(len(rows), dtype=np.bool_)
        held: list[tuple[str, npt.NDArray[np.bool_]]] = []
        for rule in rules.masks(rooms=True):  # registry order is the precedence
            mask = eligibility.rule_rows(self, rule, f, rows, now) & ~taken
            held.append((rule.reasons[0], mask))
            taken |= mask
        # The GPU rule as the placement mask applies it (rules/gpus.py, per signature pair).
        held.append((REASON_GPU, self.placement.blocked_by(REASON_GPU, rows, f) & ~taken))
        return HeldBack(cast(Sequence[str], ids), tuple(held))

    def has_room(self, framework_id: str, now: float, shape: Scalars) -> bool:
        return rooms.has_room(self, self._framework(framework_id), now, shape)

    def has_room_many(self, framework_id: str, now: float, shapes: Sequence[Scalars]) -> list[bool]:
        return rooms.has_room_many(self, self._framework(framework_id), now, shapes)

    def explain(self, framework_id: str, now: float) -> Explanation:
        return explain(self, self._framework(framework_id), framework_id, now)

    # ---- lookups ------------------------------------------------------------------------------

    def _agent(self, agent_id: str) -> int:
        try:
            return self._agents.rows[agent_id]
        except KeyError:
            raise KeyError(f"unknown agent {agent_id!r}") from None

    def _framework(self, framework_id: str) -> int:
        try:
            return self._frameworks.rows[framework_id]
        except KeyError:
            raise KeyError(f"unknown framework {framework_id!r}") from None


__all__ = ["DrfAllocator"]
