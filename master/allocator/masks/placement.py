"""The static placement rules' array form (rules/: taints, constraints, GPUs, memory pressure,
and whatever is registered there), as ``ok[a, f]``, plus ``prefer_not[a, f]`` for soft rules'
ordering. An agent's pressure, a framework's wish for BestEffort work and its unmet demands'
shapes change at run time: ``set_agent_pressure``, ``set_framework_besteffort`` and
``set_framework_shapes`` re-evaluate its one row or column.

Agents are grouped by their facts' keys (``rules.agent_key``) and frameworks by theirs
(``rules.framework_key``); the registry's rules are asked once per pair of groups, so adding one
agent to a 1k-framework cluster costs one evaluation per framework group, not per framework.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Mapping, Sequence
from dataclasses import replace

import numpy as np
import numpy.typing as npt

from corral.master.allocator import rules
from corral.master.allocator.growable import grow_matrix, grow_rows
from corral.master.allocator.rules import AgentFacts, FrameworkFacts, RuleOptions
from corral.placement import AttributeConstraint, Taint, Toleration


class PlacementMask:
    def __init__(self, agents: int, frameworks: int, filter_gpus: bool = True) -> None:
        self.options = RuleOptions(filter_gpu_resources=filter_gpus)
        self.ok = np.zeros((agents, frameworks), dtype=np.bool_)
        self.prefer_not = np.zeros((agents, frameworks), dtype=np.bool_)
        self.agent_sig = np.zeros(agents, dtype=np.int64)
        self.framework_sig = np.zeros(frameworks, dtype=np.int64)
        self.agent_sigs: list[AgentFacts] = []  # one agent's facts per signature
        self.framework_sigs: list[FrameworkFacts] = []
        self.has_soft_taints = np.zeros(agents, dtype=np.bool_)
        self._agent_sig_ids: dict[Hashable, int] = {}
        self._framework_sig_ids: dict[Hashable, int] = {}
        self._pairs: dict[tuple[int, int], tuple[bool, bool, tuple[str, ...]]] = {}
        # Rows below this were given an agent's facts once (``_set_agent_facts``); those past
        # it are as allocated, all False, and a column is written only below it: room reserved
        # ahead (``Allocator.reserve``) stays the system's zero pages until agents come.
        self.rows_in_use = 0

    def grow(self, agents: int, frameworks: int) -> None:
        self.ok = grow_matrix(self.ok, agents, frameworks, False)
        self.prefer_not = grow_matrix(self.prefer_not, agents, frameworks, False)
        self.agent_sig = grow_rows(self.agent_sig, agents, 0)
        self.has_soft_taints = grow_rows(self.has_soft_taints, agents, False)
        self.framework_sig = grow_rows(self.framework_sig, frameworks, 0)

    def pair(self, asig: int, fsig: int) -> tuple[bool, bool, tuple[str, ...]]:
        """(eligible, prefers not, blocking reasons) of an agent group for a framework group."""
        key = (asig, fsig)
        hit = self._pairs.get(key)
        if hit is None:
            agent, framework = self.agent_sigs[asig], self.framework_sigs[fsig]
            reasons = tuple(rules.blocking(agent, framework, self.options))
            hit = (not reasons, rules.prefers_not(agent, framework), reasons)
            self._pairs[key] = hit
        return hit

    def blocked_by(
        self, reason: str, rows: npt.NDArray[np.intp], col: int
    ) -> npt.NDArray[np.bool_]:
        """Of agent ``rows``, those where ``reason`` (one of ``pair``'s) keeps framework column
        ``col`` off: asked once per agent signature, as the mask itself is built."""
        fsig = int(self.framework_sig[col])
        by_sig = np.array(
            [reason in self.pair(s, fsig)[2] for s in range(len(self.agent_sigs))], dtype=np.bool_
        )
        if not len(by_sig):  # no agent yet
            return np.zeros(len(rows), dtype=np.bool_)
        return np.asarray(by_sig[self.agent_sig[rows]])

    def set_agent(
        self,
        row: int,
        attributes: Mapping[str, str],
        agent_taints: Sequence[Taint],
        framework_rows: npt.NDArray[np.intp],
        has_gpus: bool = False,
        under_pressure: bool = False,
        capacity: tuple[float, ...] = (),
    ) -> None:
        facts = AgentFacts(
            dict(attributes),
            tuple(agent_taints),
            1.0 if has_gpus else 0.0,
            under_pressure,
            capacity,
        )
        self._set_agent_facts(row, facts, framework_rows)

    def set_agent_pressure(
        self, row: int, under_pressure: bool, framework_rows: npt.NDArray[np.intp]
    ) -> bool:
        """The agent's pressure changed: its row again. False (nothing done) if it had not."""
        facts = self.agent_sigs[int(self.agent_sig[row])]
        if facts.under_pressure == under_pressure:
            return False
        self._set_agent_facts(row, replace(facts, under_pressure=under_pressure), framework_rows)
        return True

    def set_framework_besteffort(
        self, col: int, besteffort: bool, agent_rows: npt.NDArray[np.intp]
    ) -> bool:
        """The framework's wish changed: its column again. False if it had not."""
        facts = self.framework_sigs[int(self.framework_sig[col])]
        if facts.besteffort_only == besteffort:
            return False
        self._set_framework_facts(col, replace(facts, besteffort_only=besteffort), agent_rows)
        return True

    def set_framework_shapes(
        self,
        col: int,
        shapes: tuple[tuple[float, ...], ...] | None,
        agent_rows: npt.NDArray[np.intp],
    ) -> bool:
        """The framework's unmet demands' shapes changed (rules/demand_fit.py): its column
        again. False if they had not."""
        facts = self.framework_sigs[int(self.framework_sig[col])]
        if facts.demand_shapes == shapes:
            return False
        self._set_framework_facts(col, replace(facts, demand_shapes=shapes), agent_rows)
        return True

    def _set_agent_facts(
        self, row: int, facts: AgentFacts, framework_rows: npt.NDArray[np.intp]
    ) -> None:
        agent_taints = facts.taints
        sig = rules.agent_key(facts)
        asig = self._agent_sig_ids.get(sig)
        if asig is None:
            asig = self._agent_sig_ids[sig] = len(self.agent_sigs)
            self.agent_sigs.append(facts)
        self.agent_sig[row] = asig
        self.rows_in_use = max(self.rows_in_use, row + 1)
        # Whether some framework could be soft-blocked here (the walk's PreferNoSchedule key).
        self.has_soft_taints[row] = any(t.effect.value == "PreferNoSchedule" for t in agent_taints)
        self.ok[row] = False
        self.prefer_not[row] = False
        # No framework yet (a cluster coming up): no group, nothing to decide.
        for fsig, cols in _groups(self.framework_sig[framework_rows], framework_rows):
            ok, soft, _ = self.pair(asig, fsig)
            self.ok[row, cols] = ok
            self.prefer_not[row, cols] = soft

    def set_framework(
        self,
        col: int,
        tolerations: Sequence[Toleration],
        wanted: Sequence[AttributeConstraint],
        agent_rows: npt.NDArray[np.intp],
        gpu_capable: bool = False,
        role: str = "*",
        besteffort: bool = False,
    ) -> None:
        facts = FrameworkFacts(tuple(tolerations), tuple(wanted), gpu_capable, role, besteffort)
        self._set_framework_facts(col, facts, agent_rows)

    def _set_framework_facts(
        self, col: int, facts: FrameworkFacts, agent_rows: npt.NDArray[np.intp]
    ) -> None:
        sig = rules.framework_key(facts)
        fsig = self._framework_sig_ids.get(sig)
        if fsig is None:
            fsig = self._framework_sig_ids[sig] = len(self.framework_sigs)
            self.framework_sigs.append(facts)
        self.framework_sig[col] = fsig
        # Each column is built apart and written once: a column of these agent-major matrices
        # touches a cache line per agent (at 50,000 agents each pass was ~1 ms of a framework's
        # subscription, and a subscription made several).
        n = self.rows_in_use
        ok_col = np.zeros(n, dtype=np.bool_)
        soft_col = np.zeros(n, dtype=np.bool_)
        for asig, rows in _groups(self.agent_sig[agent_rows], agent_rows):
            ok, soft, _ = self.pair(asig, fsig)
            ok_col[rows] = ok
            soft_col[rows] = soft
        self.ok[:n, col] = ok_col
        self.prefer_not[:n, col] = soft_col


def _groups(
    sigs: npt.NDArray[np.int64], rows: npt.NDArray[np.intp]
) -> Iterator[tuple[int, npt.NDArray[np.intp]]]:
    """``rows`` grouped by their signature ``sigs`` (parallel arrays): (signature, its rows).
    One group, the common case (agents or frameworks alike), is found without grouping the
    rows (np.unique) first."""
    if not len(sigs):
        return
    first = int(sigs[0])
    if (sigs == first).all():
        yield first, rows
        return
    for sig in np.unique(sigs):
        yield int(sig), rows[sigs == sig]
