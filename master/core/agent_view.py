"""Why a demand's task fits no agent, counted over every connected agent at once.

``demands._agent_reasons`` is the specification: the reasons one task of a demand cannot go on
one agent. Asked agent by agent in Python it cost ~36 µs per agent, so a why-pending scan at
10,000 agents spent 3.7 s of the core's loop on 32 demands. ``AgentView`` is built once per
scan (or explain) and answers the same question for all agents with array operations:

- free resources as an agents-by-resources array (total less live tasks less outstanding
  offers; the framework's own offers are added back, as the specification counts them as room);
- the static placement rules (master/allocator/rules: taints, constraints, GPUs, and any rule
  registered there) by *signature*: agents share few distinct keys for them, so the rules are
  asked once per signature for a demand and the verdict is spread to the agents that carry it.

``tests/unit/test_agent_view.py`` holds the two equal on generated clusters.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from corral.master.allocator import rules
from corral.master.allocator.interface import HeldBack
from corral.master.allocator.rules.resources import insufficient
from corral.master.core import placement_facts
from corral.master.core.agent_arrays import AgentArrays
from corral.master.core.records import AgentRecord, FrameworkRecord
from corral.master.core.spread import spread_counts
from corral.master.core.types import Demand
from corral.placement import HOSTNAME_KEY
from corral.resources import SCALARS, covers_array

if TYPE_CHECKING:
    from corral.master.core.state import CoreState

Mask = npt.NDArray[np.bool_]
# Agents named per reason in an explanation ("naming up to a few agents per reason").
SAMPLE_AGENTS = 3


class AgentView:
    """``AgentArrays`` over ``agents`` (kept ones brought up to date, if given; ``current``:
    the caller brought them up to date over ``agents`` in this same event), with the core's
    rules to ask of them."""

    def __init__(
        self,
        core: CoreState,
        agents: Sequence[AgentRecord],
        kept: AgentArrays | None = None,
        current: bool = False,
    ) -> None:
        if kept is None:
            arrays = AgentArrays(core.book, agents)
        else:
            arrays = kept if current else kept.refreshed(core.book, agents)
        self.arrays = arrays
        statics = self.statics = arrays.statics
        self.agents = statics.agents
        self.ids = statics.ids
        self.index = statics.index
        self.rule_sets, self.attr_sets = statics.rule_sets, statics.attr_sets
        self.rules_of, self.attrs_of = statics.rules_of, statics.attrs_of
        self.free = arrays.free
        self._core = core

    def _mark_spread(
        self, fw: FrameworkRecord, d: Demand, mark: Callable[[str, Mask], None]
    ) -> None:
        spread = spread_counts(self._core, fw, d, self.agents)
        if spread is None:
            return
        if spread.rule.topology_key == HOSTNAME_KEY:
            # Every agent its own domain, almost always: agent by agent.
            by_reason: dict[str, list[int]] = {}
            for i, agent in enumerate(self.agents):
                why = spread.reason(agent)
                if why:
                    by_reason.setdefault(why, []).append(i)
            for why, rows in by_reason.items():
                where = np.zeros(len(self.agents), dtype=np.bool_)
                where[rows] = True
                mark(why, where)
            return
        for s, attrs in enumerate(self.attr_sets):
            value = attrs.get(spread.rule.topology_key)
            why = spread.rule.blocked(value, spread.counts, spread.fewest)
            if why:
                mark(why, self.attrs_of == s)

    def _held(self, held: HeldBack) -> list[tuple[str, Mask]]:
        """``held``'s reasons and masks in this view's agent order. The allocator's agents by id are
        this view's (the connected agents, by id) unless an agent is between the two: then
        each is placed by id, once per order (kept with the statics)."""
        st = self.statics
        if st.held_ids is not held.agent_ids:
            same = len(held.agent_ids) == len(self.ids) and all(
                a == b for a, b in zip(held.agent_ids, self.ids, strict=True)
            )
            st.held_ids = held.agent_ids
            st.held_at = (
                None
                if same
                else np.fromiter(
                    (self.index.get(str(a), -1) for a in held.agent_ids), dtype=np.intp
                )
            )
        at = st.held_at
        if at is None:
            return list(held.held)
        n = len(self.ids)
        out = []
        for reason, mask in held.held:
            where = np.zeros(n, dtype=np.bool_)
            where[at[mask & (at >= 0)]] = True
            out.append((reason, where))
        return out

    def reasons(
        self, fw: FrameworkRecord, d: Demand, held: HeldBack | dict[str, str], fits: str
    ) -> list[dict[str, Any]]:
        """``demands.demand_reasons`` over this view's agents: per reason, how many agents and
        up to three of them, most agents first (``fits`` names the agents with none)."""
        n = len(self.agents)
        masks: dict[str, Mask] = {}

        def mark(reason: str, where: Mask) -> None:
            had = masks.get(reason)
            masks[reason] = where.copy() if had is None else had | where

        free = self.arrays.free_for(fw.framework_id)
        for k, (name, need) in enumerate(zip(SCALARS, d.resources.scalars(), strict=True)):
            short = ~covers_array(free[:, k], need)
            if short.any():
                mark(insufficient(name), short)
        facts = placement_facts.demand_facts(fw, d)
        options = self._core.allocator.rule_options
        for s, agent in enumerate(self.rule_sets):
            for reason in rules.blocking(agent, facts, options):
                mark(reason, self.rules_of == s)
        if isinstance(held, HeldBack):
            for reason, where in self._held(held):
                if where.any():
                    mark(reason, where)
        else:
            by_reason: dict[str, list[int]] = {}
            for agent_id, why in held.items():
                i = self.index.get(agent_id)
                if i is not None:
                    by_reason.setdefault(why, []).append(i)
            for why, held_rows in by_reason.items():
                where = np.zeros(n, dtype=np.bool_)
                where[held_rows] = True
                mark(why, where)
        self._mark_spread(fw, d, mark)
        if n:
            some = np.zeros(n, dtype=np.bool_)
            for m in masks.values():
                some |= m
            if not some.all():
                mark(fits, ~some)
        tallied: list[tuple[int, str, list[str]]] = []
        for reason, m in masks.items():
            rows = np.flatnonzero(m)
            if len(rows):
                sample = [self.ids[i] for i in rows[:SAMPLE_AGENTS].tolist()]
                tallied.append((len(rows), reason, sample))
        tallied.sort(key=lambda r: (-r[0], r[1]))
        return [{"reason": r, "agents": k, "sample_agents": ids} for k, r, ids in tallied]
