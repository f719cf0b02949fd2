"""The reference allocator: the specification of Corral's allocation decisions, in plain Python.

It is slow on purpose (it recomputes everything from the definitions); the numpy allocator must
make exactly the same decisions, which the property tests check. The rules:

STATE
  Agents, in registration order: ``total`` (cpus, mem, disk, gpus), attributes, taints, static
  reservations ``{role: scalars}`` (part of the total; their sum may not exceed it), conditions
  (names set at run time: "draining" by ``set_agent_draining``, others by
  ``set_agent_condition``).
  An agent's *unreserved capacity* is total minus all reservations.
  Frameworks: role, tolerations, attribute constraints, conditions ("suppressed" by
  ``set_suppressed``, others by ``set_framework_condition``), priority (an int, default 0).
  Roles exist once named; weight (default 1), quota guarantee (default 0) and limit (default
  unlimited).
  Charges: what each framework holds on each agent. A charge on an agent draws first on the
  reservation of the framework's role there, then on the unreserved capacity; a recovery gives
  back to the role's reservation first, then to the unreserved pool (never more than was
  charged). ``allocate()`` may overcommit the unreserved pool (tasks found at re-registration);
  free amounts are clamped at zero.
  Free on agent a: unreserved_free = max(0, capacity - unreserved used) and, per reserved role
  r, reserved_free[r] = reservation[r] - reserved used by r.
  Refuse filters (Mesos' RefusedOfferFilter): ``(framework, agent) -> (expires_at, refused)``,
  refused being the scalars refused (None: everything). Adding keeps the later expiry and
  takes the newest refused amount. A filter is active while ``now < expires_at``; it is dropped
  when the agent's free resources (unreserved free plus every role's reserved free) come to
  exceed ``refused`` by more than EPSILON in some resource (the refused amount no longer
  ``corral.resources.fits`` what is free), checked whenever resources
  return to the agent (recover): more is free than was refused, so it is offered again at once.
  REVIVE clears a framework's filters.
  Removing a framework drops its charges (given back to the pools) and filters; removing an
  agent drops every charge and filter on it.

SHARES
  cluster total C = sum of totals of all agents (draining ones included).
  share(x) = max over resources k not excluded from fairness with C[k] > 0 of x[k] / C[k]
  (0 if none). A framework's allocation is the sum of its charges; a role's is the sum of its
  frameworks'. Role key = share(role allocation) / weight; framework key = share(allocation).
  A role's quota *consumption* is its allocation plus its unallocated reservations (the
  reserved_free of the role, summed over agents), as in Mesos: a reservation counts against
  the role's quota whether or not it is used.
  A role has an *unmet guarantee* if its consumption is below its guarantee in some resource.

DRF ORDER (for an agent a)
  Frameworks sorted by ``order.reference_key`` (the key is written once, in order.py):
    (-priority, intolerant of a PreferNoSchedule taint of a ? 1 : 0,
     role has unmet guarantee ? 0 : 1, role key, role allocations received, role name,
     framework key, framework allocations received, framework id).
  Allocations received: every charge (cycle offer or ``allocate()``) adds one to the
  framework's count and to its role's; counts never go down.

ELIGIBILITY of framework f on agent a (the rules; each has a fixed reason string)
  No dynamic rule closes the pair now (rules.masks(), asked pair by pair with the pair's
  DynamicFacts: f not suppressed; no active refuse filter (f, a); a not draining; and any
  registered), and every static rule allows it (rules.STATIC: every NoSchedule or NoExecute
  taint of a tolerated by f; every attribute constraint of f met by a's attributes; if a has
  GPUs (and filter_gpu_resources is on), f has the GPU_RESOURCES capability; if a is under
  memory pressure, f does not want only BestEffort work; and any registered). An agent an
  agent-scope dynamic rule closes (draining) is *closed*.

OFFER SIZE for f (role r) on a
  remaining_limit = max(0, limit[r] - consumption[r]) per resource.
  from_reserved = reserved_free[r] (already counted in the consumption).
  allowance = unmet_guarantee[r] + max(0, headroom_available - headroom_required), where
    unmet_guarantee[r] = max(0, guarantee[r] - consumption[r]),
    headroom_required = sum over roles of unmet_guarantee, and
    headroom_available = sum of unreserved_free over agents not closed (all per resource);
  from_unreserved = min(unreserved_free, remaining_limit, allowance).
  offer = from_reserved + from_unreserved (rules/quota.py's ``offer``). It is *allocatable* if
  it meets every threshold of some alternative of min_allocatable (Mesos' format; default
  "cpus:0.01|mem:32").

CYCLE(now, seed, cpus)
  1. Drop expired filters.
  2. order = agents in registration order permuted by numpy.random.default_rng(seed)
     .permutation(number of agents).
  3. For each priority level p of the frameworks, highest first (a pass; order.py says why):
     for each agent a in order (skipping closed ones; stopping the whole cycle once the
     plan holds ``cpus`` cpus, added up offer by offer in plan order): repeat
       take the first framework f of level p in the DRF order for a (recomputed now, since
       shares move with every charge) that is eligible on a, was not yet offered a in this
       cycle, and whose offer on a is allocatable; charge the offer to f and append
       Allocation(f, a, offer);
     until no framework qualifies.
  (Skipped frameworks stay skipped: a charge only lowers other frameworks' offers, so
  restarting the scan after each offer is the same as continuing it.)

EXPLAIN(f, now)
  offered_agents = agents offered to f in the last cycle. reasons, each with its count:
  each dynamic rule's reason (suppressed: all agents; refuse filter, agent draining: the agents
  it applies to) / each untolerated taint / each unmet constraint (agents it applies to),
  quota limit <res> reached (eligible agents, if the role's consumption of <res> reached its
  limit), headroom kept for unmet guarantees (eligible agents where the allowance is zero in
  cpus and mem), no free resources (eligible agents whose current offer would not be
  allocatable), lower DRF order (frameworks ahead of f). Zero counts are left out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from corral.master.allocator import drf, order, rules
from corral.master.allocator.interface import (
    Allocation,
    Explanation,
    HeldBack,
    Plan,
    PlanSource,
    Room,
    Scalars,
)
from corral.master.allocator.options import (
    REASON_GPU,
    REASON_HEADROOM,
    REASON_NO_FREE,
    REASON_ORDER,
    AllocatorOptions,
    allocatable,
    check_scalars,
    check_weight,
    quota_reason,
)
from corral.master.allocator.rules import AgentFacts, DynamicFacts, FrameworkFacts, RuleOptions
from corral.placement import AttributeConstraint, Taint, Toleration
from corral.resources import SCALARS, fits

Vec = list[float]
N = len(SCALARS)
INF = math.inf


def _zeros() -> Vec:
    return [0.0] * N


def _vec(s: Sequence[float]) -> Vec:
    return [float(x) for x in s]


def _tuple(v: Vec) -> Scalars:
    return (v[0], v[1], v[2], v[3])


@dataclass
class _Agent:
    total: Vec
    attributes: dict[str, str]
    taints: tuple[Taint, ...]
    reserved: dict[str, Vec]
    conditions: frozenset[str] = frozenset()  # draining and others (rules/base.py)
    under_pressure: bool = False  # memory pressure (rules/pressure.py)
    used_unreserved: Vec = field(default_factory=_zeros)
    used_reserved: dict[str, Vec] = field(default_factory=dict)

    def capacity(self) -> Vec:
        cap = list(self.total)
        for amounts in self.reserved.values():
            cap = [c - x for c, x in zip(cap, amounts, strict=True)]
        return cap

    def unreserved_free(self) -> Vec:
        return [max(0.0, c - u) for c, u in zip(self.capacity(), self.used_unreserved, strict=True)]

    def reserved_free(self, role: str) -> Vec:
        if role not in self.reserved:
            return _zeros()
        used = self.used_reserved.get(role, _zeros())
        return [max(0.0, r - u) for r, u in zip(self.reserved[role], used, strict=True)]


@dataclass
class _Framework:
    role: str
    tolerations: tuple[Toleration, ...]
    constraints: tuple[AttributeConstraint, ...]
    gpu_resources: bool = False  # the GPU_RESOURCES capability
    besteffort_only: bool = False  # its unmet demands are all BestEffort (rules/pressure.py)
    demand_shapes: tuple[tuple[float, ...], ...] | None = None  # rules/demand_fit.py
    conditions: frozenset[str] = frozenset()  # suppressed and others (rules/base.py)
    priority: int = 0
    charges: dict[str, Vec] = field(default_factory=dict)
    filters: dict[str, float] = field(default_factory=dict)  # agent -> expires_at
    refused: dict[str, Vec | None] = field(default_factory=dict)  # agent -> what was refused
    count: int = 0  # allocations received


@dataclass
class _Role:
    weight: float = 1.0
    guarantee: Vec = field(default_factory=_zeros)
    limit: Vec = field(default_factory=lambda: [INF] * N)
    count: int = 0  # allocations received by its frameworks


class ReferenceAllocator:
    """Plain-Python hierarchical weighted DRF; see the module docstring for the rules."""

    def __init__(self, options: AllocatorOptions | None = None) -> None:
        self.options = options or AllocatorOptions()
        self._min = self.options.min_rows()
        self._fair = self.options.fair_indices()
        self._agents: dict[str, _Agent] = {}
        self._frameworks: dict[str, _Framework] = {}
        self._roles: dict[str, _Role] = {}
        self._last_offered: dict[str, int] = {}

    # ---- agents -------------------------------------------------------------------------------

    def reserve(self, agents: int, frameworks: int) -> None:
        """Nothing to make room in: the reference keeps dicts."""

    def add_agent(
        self,
        agent_id: str,
        total: Scalars,
        attributes: Mapping[str, str],
        taints: Sequence[Taint],
        reservations: Mapping[str, Scalars] | None = None,
    ) -> None:
        if agent_id in self._agents:
            raise ValueError(f"agent {agent_id!r} is already known")
        tot = _vec(check_scalars(f"agent {agent_id} total", total))
        reserved: dict[str, Vec] = {}
        summed = _zeros()
        for role, amounts in (reservations or {}).items():
            vec = _vec(check_scalars(f"agent {agent_id} reservation for {role}", amounts))
            reserved[role] = vec
            summed = [s + x for s, x in zip(summed, vec, strict=True)]
            self._roles.setdefault(role, _Role())
        if any(s > t for s, t in zip(summed, tot, strict=True)):
            raise ValueError(f"agent {agent_id}: reservations exceed the total")
        self._agents[agent_id] = _Agent(tot, dict(attributes), tuple(taints), reserved)

    def remove_agent(self, agent_id: str) -> None:
        self._agent(agent_id)
        del self._agents[agent_id]
        for fw in self._frameworks.values():
            fw.charges.pop(agent_id, None)
            fw.filters.pop(agent_id, None)
            fw.refused.pop(agent_id, None)

    def set_agent_draining(self, agent_id: str, draining: bool) -> None:
        self.set_agent_condition(agent_id, rules.draining.CONDITION, draining)

    def set_agent_condition(self, agent_id: str, name: str, on: bool) -> None:
        agent = self._agent(agent_id)
        agent.conditions = agent.conditions | {name} if on else agent.conditions - {name}

    def set_agent_pressure(self, agent_id: str, under_pressure: bool) -> None:
        self._agent(agent_id).under_pressure = under_pressure

    def set_besteffort(self, framework_id: str, besteffort_only: bool) -> None:
        self._framework(framework_id).besteffort_only = besteffort_only

    def set_demand_shapes(
        self, framework_id: str, shapes: tuple[tuple[float, ...], ...] | None
    ) -> None:
        self._framework(framework_id).demand_shapes = shapes

    # ---- frameworks and roles -----------------------------------------------------------------

    def add_framework(
        self,
        framework_id: str,
        role: str,
        tolerations: Sequence[Toleration] = (),
        constraints: Sequence[AttributeConstraint] = (),
        gpu_resources: bool = False,
    ) -> None:
        if framework_id in self._frameworks:
            raise ValueError(f"framework {framework_id!r} is already known")
        self._roles.setdefault(role, _Role())
        self._frameworks[framework_id] = _Framework(
            role, tuple(tolerations), tuple(constraints), gpu_resources
        )

    def remove_framework(self, framework_id: str) -> None:
        fw = self._framework(framework_id)
        for agent_id, charge in list(fw.charges.items()):
            self.recover(framework_id, agent_id, _tuple(charge))
        del self._frameworks[framework_id]
        self._last_offered.pop(framework_id, None)

    def set_suppressed(self, framework_id: str, suppressed: bool) -> None:
        self.set_framework_condition(framework_id, rules.suppression.CONDITION, suppressed)

    def set_framework_condition(self, framework_id: str, name: str, on: bool) -> None:
        fw = self._framework(framework_id)
        fw.conditions = fw.conditions | {name} if on else fw.conditions - {name}

    def set_priority(self, framework_id: str, priority: int) -> None:
        self._framework(framework_id).priority = order.check_priority(framework_id, priority)

    def set_weight(self, role: str, weight: float) -> None:
        self._roles.setdefault(role, _Role()).weight = check_weight(role, weight)

    def set_quota(self, role: str, guarantee: Scalars | None, limit: Scalars | None) -> None:
        g = _zeros()
        if guarantee is not None:
            g = _vec(check_scalars(f"guarantee of {role}", guarantee))
        lim = [INF] * N if limit is None else _vec(check_scalars(f"limit of {role}", limit, True))
        if any(a > b for a, b in zip(g, lim, strict=True)):
            raise ValueError(f"quota of role {role!r}: guarantee exceeds limit")
        r = self._roles.setdefault(role, _Role())
        r.guarantee, r.limit = g, lim

    # ---- charges and filters ------------------------------------------------------------------

    def allocate(self, framework_id: str, agent_id: str, scalars: Scalars) -> None:
        fw = self._framework(framework_id)
        agent = self._agent(agent_id)
        self._charge(fw, agent_id, agent, _vec(check_scalars("allocate", scalars)))

    def recover_many(self, returns: Sequence[tuple[str, str, Sequence[float]]]) -> None:
        for _, _, scalars in returns:  # all or nothing: a bad entry changes nothing
            check_scalars("recover", scalars)
        for framework_id, agent_id, (cpus, mem, disk, gpus) in returns:
            self.recover(framework_id, agent_id, (cpus, mem, disk, gpus))

    def recover_handles(
        self, source: PlanSource, handles: npt.ArrayLike, scalars: npt.ArrayLike
    ) -> None:
        self.recover_many(source.entries(handles, scalars))

    def recover(self, framework_id: str, agent_id: str, scalars: Scalars) -> None:
        fw = self._frameworks.get(framework_id)
        agent = self._agents.get(agent_id)
        if fw is None or agent is None:
            return  # already gone with its framework or agent
        amounts = _vec(check_scalars("recover", scalars))
        if agent_id in fw.charges:
            self._give_back(fw, agent_id, agent, amounts)
        self._lift_filters(agent_id, agent)

    def _lift_filters(self, agent_id: str, agent: _Agent) -> None:
        """Drop the filters on the agent that refused less than it now has free."""
        free = agent.unreserved_free()
        for role in agent.reserved:
            free = [f + r for f, r in zip(free, agent.reserved_free(role), strict=True)]
        for fw in self._frameworks.values():
            if agent_id not in fw.filters:
                continue
            refused = fw.refused.get(agent_id)
            if refused is not None and not fits(refused, free):
                del fw.filters[agent_id]
                del fw.refused[agent_id]

    def _give_back(self, fw: _Framework, agent_id: str, agent: _Agent, amounts: Vec) -> None:
        charge = fw.charges[agent_id]
        back = [min(x, c) for x, c in zip(amounts, charge, strict=True)]
        left = [c - b for c, b in zip(charge, back, strict=True)]
        if all(x <= 0 for x in left):
            del fw.charges[agent_id]
        else:
            fw.charges[agent_id] = left
        used_res = agent.used_reserved.get(fw.role)
        if used_res is not None:
            to_res = [min(b, u) for b, u in zip(back, used_res, strict=True)]
            agent.used_reserved[fw.role] = [u - t for u, t in zip(used_res, to_res, strict=True)]
            back = [b - t for b, t in zip(back, to_res, strict=True)]
        agent.used_unreserved = [
            u - min(b, u) for u, b in zip(agent.used_unreserved, back, strict=True)
        ]

    def add_filter(
        self,
        framework_id: str,
        agent_id: str,
        expires_at: float,
        refused: Sequence[float] | None = None,
    ) -> None:
        fw = self._frameworks.get(framework_id)
        if fw is None or agent_id not in self._agents:
            return
        if math.isnan(expires_at):
            raise ValueError("filter expiry is NaN")
        amount = None if refused is None else _vec(check_scalars("refused", refused))
        fw.filters[agent_id] = max(fw.filters.get(agent_id, -INF), float(expires_at))
        fw.refused[agent_id] = amount

    def add_filters(
        self,
        framework_id: str,
        agent_ids: Sequence[str],
        expires_at: float,
        refused: Sequence[Sequence[float]] | None = None,
    ) -> None:
        amounts: Sequence[Sequence[float] | None] = (
            [None] * len(agent_ids) if refused is None else refused
        )
        for agent_id, amount in zip(agent_ids, amounts, strict=True):
            self.add_filter(framework_id, agent_id, expires_at, amount)

    def charged(self, framework_id: str, agent_id: str) -> Scalars:
        fw = self._frameworks.get(framework_id)
        charge = None if fw is None else fw.charges.get(agent_id)
        return _tuple(charge) if charge is not None else (0.0, 0.0, 0.0, 0.0)

    def clear_filters(self, framework_id: str) -> None:
        fw = self._framework(framework_id)
        fw.filters.clear()
        fw.refused.clear()

    # ---- the cycle ----------------------------------------------------------------------------

    def cycle(self, now: float, seed: int, cpus: float = math.inf) -> Plan:
        for fw in self._frameworks.values():
            fw.filters = {a: t for a, t in fw.filters.items() if now < t}
            fw.refused = {a: r for a, r in fw.refused.items() if a in fw.filters}
        agent_ids = list(self._agents)
        perm = np.random.default_rng(seed).permutation(len(agent_ids))
        plan: list[Allocation] = []
        offered: dict[str, set[str]] = {}
        planned = 0.0  # cpus in the plan, added up offer by offer in walk order
        done: dict[str, set[str]] = {a: set() for a in agent_ids}  # offered in this cycle
        for level in sorted({fw.priority for fw in self._frameworks.values()}, reverse=True):
            for i in perm:
                if planned >= cpus:
                    break
                agent_id = agent_ids[int(i)]
                agent = self._agents[agent_id]
                if self._closed(agent, now):
                    continue
                while True:
                    choice = self._pick(agent_id, agent, now, done[agent_id], level)
                    if choice is None:
                        break
                    framework_id, offer = choice
                    self._charge(self._frameworks[framework_id], agent_id, agent, offer)
                    plan.append(Allocation(framework_id, agent_id, _tuple(offer)))
                    planned += offer[0]
                    done[agent_id].add(framework_id)
                    offered.setdefault(framework_id, set()).add(agent_id)
        self._last_offered = {f: len(a) for f, a in offered.items()}
        return Plan.of(plan)

    def _pick(
        self, agent_id: str, agent: _Agent, now: float, done: set[str], level: int
    ) -> tuple[str, Vec] | None:
        most = agent.unreserved_free()
        for role in agent.reserved:
            most = [m + r for m, r in zip(most, agent.reserved_free(role), strict=True)]
        if not self._allocatable(most):
            return None  # no offer of this agent can be allocatable any more
        candidates = {
            fid
            for fid, fw in self._frameworks.items()
            if fw.priority == level and fid not in done and self._eligible(fw, agent_id, agent, now)
        }
        if not candidates:
            return None
        fw_alloc, role_alloc = self._allocations()
        for framework_id in self._drf_order(agent, fw_alloc, role_alloc):
            if framework_id in candidates:
                fw = self._frameworks[framework_id]
                offer = self._offer(fw, agent, role_alloc, now)
                if self._allocatable(offer):
                    return framework_id, offer
        return None

    # ---- definitions --------------------------------------------------------------------------

    def _cluster_total(self) -> Vec:
        total = _zeros()
        for agent in self._agents.values():
            total = [t + x for t, x in zip(total, agent.total, strict=True)]
        return total

    def _allocations(self) -> tuple[dict[str, Vec], dict[str, Vec]]:
        """Allocation of every framework (sum of its charges) and of every role."""
        fw_alloc: dict[str, Vec] = {}
        role_alloc: dict[str, Vec] = {name: _zeros() for name in self._roles}
        for fid, fw in self._frameworks.items():
            alloc = _zeros()
            for charge in fw.charges.values():
                alloc = [a + c for a, c in zip(alloc, charge, strict=True)]
            fw_alloc[fid] = alloc
            role_alloc[fw.role] = [r + a for r, a in zip(role_alloc[fw.role], alloc, strict=True)]
        return fw_alloc, role_alloc

    def _consumption(self, role: str, role_alloc: dict[str, Vec]) -> Vec:
        """Allocation plus unallocated reservations of the role (its quota consumption)."""
        out = list(role_alloc[role])
        for agent in self._agents.values():
            if role in agent.reserved:
                out = [c + r for c, r in zip(out, agent.reserved_free(role), strict=True)]
        return out

    def _unmet(self, role: str, role_alloc: dict[str, Vec]) -> Vec:
        guarantee = self._roles[role].guarantee
        consumed = self._consumption(role, role_alloc)
        return [max(0.0, g - c) for g, c in zip(guarantee, consumed, strict=True)]

    def _drf_order(
        self, agent: _Agent | None, fw_alloc: dict[str, Vec], role_alloc: dict[str, Vec]
    ) -> list[str]:
        total = self._cluster_total()
        fair = drf.fair_columns(total, self._fair)
        facts = self._agent_facts(agent) if agent is not None else None
        role_keys: dict[str, tuple[int, float]] = {}
        for name, role in self._roles.items():
            alloc = role_alloc[name]
            unmet = any(u > 0 for u in self._unmet(name, role_alloc))
            role_keys[name] = (
                0 if unmet else 1,
                drf.dominant_share([alloc], 0, total, fair) / role.weight,
            )

        def key(item: tuple[str, _Framework]) -> order.ReferenceKey:
            fid, fw = item
            tier, rkey = role_keys[fw.role]
            return order.reference_key(
                priority=fw.priority,
                prefers_not=facts is not None
                and rules.prefers_not(facts, self._framework_facts(fw)),
                role_tier=tier,
                role_key=rkey,
                role_count=self._roles[fw.role].count,
                role_name=fw.role,
                share=drf.dominant_share([fw_alloc[fid]], 0, total, fair),
                count=fw.count,
                framework_id=fid,
            )

        return [fid for fid, _ in sorted(self._frameworks.items(), key=key)]

    def _eligible(self, fw: _Framework, agent_id: str, agent: _Agent, now: float) -> bool:
        return not self._blockers(fw, agent_id, agent, now)

    def _blockers(
        self, fw: _Framework, agent_id: str, agent: _Agent, now: float, rooms: bool = False
    ) -> list[str]:
        """The reasons (rule by rule) that make ``fw`` ineligible on the agent; ``rooms``: only
        the dynamic rules rooms ask (not suppression)."""
        # The dynamic rules, then the static ones, as every consumer asks them (rules/).
        facts = DynamicFacts(now, agent.conditions, fw.conditions, fw.filters.get(agent_id, -INF))
        reasons = rules.blocking_now(facts, rooms)
        reasons += rules.blocking(
            self._agent_facts(agent), self._framework_facts(fw), self.rule_options
        )
        return reasons

    @staticmethod
    def _closed(agent: _Agent, now: float) -> bool:
        """An agent-scope dynamic rule (draining, ...) closes the agent to every framework."""
        facts = DynamicFacts(now, agent.conditions)
        return any(r.blocks(facts) for r in rules.masks() if r.scope == "agent")

    @staticmethod
    def _agent_facts(agent: _Agent) -> AgentFacts:
        return AgentFacts(
            agent.attributes,
            tuple(agent.taints),
            agent.total[3],
            agent.under_pressure,
            tuple(agent.total),
        )

    @staticmethod
    def _framework_facts(fw: _Framework) -> FrameworkFacts:
        return FrameworkFacts(
            tuple(fw.tolerations),
            tuple(fw.constraints),
            fw.gpu_resources,
            fw.role,
            fw.besteffort_only,
            fw.demand_shapes,
        )

    @property
    def rule_options(self) -> RuleOptions:
        return RuleOptions(filter_gpu_resources=self.options.filter_gpu_resources)

    def _allowance(self, role: str, role_alloc: dict[str, Vec], now: float) -> Vec:
        required = _zeros()
        for name in self._roles:
            unmet = self._unmet(name, role_alloc)
            required = [r + u for r, u in zip(required, unmet, strict=True)]
        if all(r <= 0 for r in required):
            return [INF] * N  # no guarantee pending: nothing to hold back
        available = _zeros()
        for agent in self._agents.values():
            if not self._closed(agent, now):
                free = agent.unreserved_free()
                available = [a + f for a, f in zip(available, free, strict=True)]
        return [
            u + max(0.0, a - r)
            for u, a, r in zip(self._unmet(role, role_alloc), available, required, strict=True)
        ]

    def _offer(self, fw: _Framework, agent: _Agent, role_alloc: dict[str, Vec], now: float) -> Vec:
        role = self._roles[fw.role]
        consumed = self._consumption(fw.role, role_alloc)
        remaining = [max(0.0, lim - c) for lim, c in zip(role.limit, consumed, strict=True)]
        from_res = agent.reserved_free(fw.role)
        allowance = self._allowance(fw.role, role_alloc, now)
        return rules.quota.offer(agent.unreserved_free(), from_res, remaining, allowance)

    def _allocatable(self, offer: Vec) -> bool:
        return allocatable(offer, self._min)

    def _charge(self, fw: _Framework, agent_id: str, agent: _Agent, amounts: Vec) -> None:
        fw.count += 1
        self._roles[fw.role].count += 1
        charge = fw.charges.get(agent_id, _zeros())
        fw.charges[agent_id] = [c + x for c, x in zip(charge, amounts, strict=True)]
        from_res = [min(x, f) for x, f in zip(amounts, agent.reserved_free(fw.role), strict=True)]
        if fw.role in agent.reserved:
            used = agent.used_reserved.get(fw.role, _zeros())
            agent.used_reserved[fw.role] = [u + x for u, x in zip(used, from_res, strict=True)]
        agent.used_unreserved = [
            u + x - r for u, x, r in zip(agent.used_unreserved, amounts, from_res, strict=True)
        ]

    # ---- room (gang bundles) ------------------------------------------------------------------

    def room(self, framework_id: str, now: float, shape: Scalars, want: int | None = None) -> Room:
        del want  # the whole room, always (the specification)
        fw = self._framework(framework_id)
        need = _vec(shape)
        ids: list[str] = []
        unreserved: list[Vec] = []
        reserved: list[Vec] = []
        for agent_id in sorted(self._agents):
            agent = self._agents[agent_id]
            if self._blockers(fw, agent_id, agent, now, rooms=True):
                continue
            free, held = agent.unreserved_free(), agent.reserved_free(fw.role)
            if not fits([f + h for f, h in zip(free, held, strict=True)], need):
                continue  # not one task of the shape fits
            ids.append(agent_id)
            unreserved.append(free)
            reserved.append(held)
        _, role_alloc = self._allocations()
        consumed = self._consumption(fw.role, role_alloc)
        allowance = self._allowance(fw.role, role_alloc, now)
        limit = self._roles[fw.role].limit
        headroom = [
            min(max(0.0, lim - c), a) for lim, c, a in zip(limit, consumed, allowance, strict=True)
        ]
        return Room(
            ids,
            np.array(unreserved, dtype=np.float64).reshape(-1, N),
            np.array(reserved, dtype=np.float64).reshape(-1, N),
            _tuple(headroom),
        )

    # ---- explain ------------------------------------------------------------------------------

    def held_back(self, framework_id: str, now: float) -> dict[str, str]:
        fw = self._framework(framework_id)
        out: dict[str, str] = {}
        for agent_id in sorted(self._agents):
            agent = self._agents[agent_id]
            # The dynamic rules rooms ask, in registry order (the precedence), then GPUs.
            facts = DynamicFacts(
                now, agent.conditions, fw.conditions, fw.filters.get(agent_id, -INF)
            )
            dynamic = rules.blocking_now(facts, rooms=True)
            if dynamic:
                out[agent_id] = dynamic[0]
            elif REASON_GPU in rules.gpus.RULE.blocking(
                self._agent_facts(agent), self._framework_facts(fw), self.rule_options
            ):
                out[agent_id] = REASON_GPU
        return out

    def held_back_masks(self, framework_id: str, now: float) -> HeldBack:
        held = self.held_back(framework_id, now)
        ids = sorted(self._agents)
        why = [held.get(a) for a in ids]
        reasons = [r.reasons[0] for r in rules.masks(rooms=True)] + [REASON_GPU]
        return HeldBack(
            ids,
            tuple((r, np.array([w == r for w in why], dtype=np.bool_)) for r in reasons),
        )

    def has_room(self, framework_id: str, now: float, shape: Scalars) -> bool:
        return bool(len(self.room(framework_id, now, shape).agent_ids))

    def has_room_many(self, framework_id: str, now: float, shapes: Sequence[Scalars]) -> list[bool]:
        return [self.has_room(framework_id, now, s) for s in shapes]

    def explain(self, framework_id: str, now: float) -> Explanation:
        fw = self._framework(framework_id)
        reasons: dict[str, int] = {}
        eligible: list[_Agent] = []
        for agent_id, agent in self._agents.items():
            blockers = self._blockers(fw, agent_id, agent, now)
            for reason in blockers:
                reasons[reason] = reasons.get(reason, 0) + 1
            if not blockers:
                eligible.append(agent)
        fw_alloc, role_alloc = self._allocations()
        role = self._roles[fw.role]
        alloc = role_alloc[fw.role]
        consumed = self._consumption(fw.role, role_alloc)
        for k, name in enumerate(SCALARS):
            if consumed[k] >= role.limit[k] and eligible:
                reasons[quota_reason(name)] = len(eligible)
        allowance = self._allowance(fw.role, role_alloc, now)
        if allowance[0] <= 0 and allowance[1] <= 0 and eligible:
            reasons[REASON_HEADROOM] = len(eligible)
        no_free = sum(
            1 for a in eligible if not self._allocatable(self._offer(fw, a, role_alloc, now))
        )
        if no_free:
            reasons[REASON_NO_FREE] = no_free
        position = self._drf_order(None, fw_alloc, role_alloc).index(framework_id)
        if position:
            reasons[REASON_ORDER] = position
        total = self._cluster_total()
        fair = drf.fair_columns(total, self._fair)
        details: dict[str, Any] = {
            "role": fw.role,
            "weight": role.weight,
            "dominant_share": drf.dominant_share([fw_alloc[framework_id]], 0, total, fair),
            "role_share": drf.dominant_share([alloc], 0, total, fair),
            "drf_position": position,
            "eligible_agents": len(eligible),
            "priority": fw.priority,
        }
        return Explanation(framework_id, self._last_offered.get(framework_id, 0), reasons, details)

    # ---- lookups ------------------------------------------------------------------------------

    def _agent(self, agent_id: str) -> _Agent:
        try:
            return self._agents[agent_id]
        except KeyError:
            raise KeyError(f"unknown agent {agent_id!r}") from None

    def _framework(self, framework_id: str) -> _Framework:
        try:
            return self._frameworks[framework_id]
        except KeyError:
            raise KeyError(f"unknown framework {framework_id!r}") from None
