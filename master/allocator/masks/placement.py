"""The placement part of eligibility: hard taints, attribute constraints, GPUs and memory
pressure, as ``ok[a, f]``, plus ``prefer_not[a, f]`` for PreferNoSchedule ordering. Pressure
changes at run time: ``set_agent_pressure`` and ``set_framework_besteffort`` re-evaluate the
one row or column, through the same signatures.

Agents are grouped by (attributes, taints) and frameworks by (tolerations, constraints); the
rules are evaluated once per pair of groups, so adding one agent to a 1k-framework cluster costs
one evaluation per framework group, not per framework.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from corral.master.allocator.growable import grow_cols, grow_rows
from corral.master.allocator.masks import constraints, gpus, pressure, taints
from corral.placement import AttributeConstraint, Taint, Toleration

# (attributes, taints, has GPUs, under memory pressure) and (tolerations, constraints, GPU
# capable, wants only BestEffort work).
AgentSig = tuple[tuple[tuple[str, str], ...], tuple[Taint, ...], bool, bool]
FrameworkSig = tuple[tuple[Toleration, ...], tuple[AttributeConstraint, ...], bool, bool]


class PlacementMask:
    def __init__(self, agents: int, frameworks: int, filter_gpus: bool = True) -> None:
        self.filter_gpus = filter_gpus
        self.ok = np.zeros((agents, frameworks), dtype=np.bool_)
        self.prefer_not = np.zeros((agents, frameworks), dtype=np.bool_)
        self.agent_sig = np.zeros(agents, dtype=np.int64)
        self.framework_sig = np.zeros(frameworks, dtype=np.int64)
        self.agent_sigs: list[AgentSig] = []
        self.framework_sigs: list[FrameworkSig] = []
        self.has_soft_taints = np.zeros(agents, dtype=np.bool_)
        self._agent_sig_ids: dict[AgentSig, int] = {}
        self._framework_sig_ids: dict[FrameworkSig, int] = {}
        self._pairs: dict[tuple[int, int], tuple[bool, bool, tuple[str, ...]]] = {}

    def grow(self, agents: int, frameworks: int) -> None:
        self.ok = grow_cols(grow_rows(self.ok, agents, False), frameworks, False)
        self.prefer_not = grow_cols(grow_rows(self.prefer_not, agents, False), frameworks, False)
        self.agent_sig = grow_rows(self.agent_sig, agents, 0)
        self.has_soft_taints = grow_rows(self.has_soft_taints, agents, False)
        self.framework_sig = grow_rows(self.framework_sig, frameworks, 0)

    def pair(self, asig: int, fsig: int) -> tuple[bool, bool, tuple[str, ...]]:
        """(eligible, prefers not, blocking reasons) of an agent group for a framework group."""
        key = (asig, fsig)
        hit = self._pairs.get(key)
        if hit is None:
            attrs, agent_taints, has_gpus, under_pressure = self.agent_sigs[asig]
            tolerations, wanted, gpu_capable, besteffort = self.framework_sigs[fsig]
            reasons = tuple(
                taints.blocking(agent_taints, tolerations)
                + constraints.unmet(wanted, dict(attrs))
                + gpus.blocking(1.0 if has_gpus else 0.0, gpu_capable, self.filter_gpus)
                + pressure.blocking(under_pressure, besteffort)
            )
            hit = (not reasons, taints.prefers_not(agent_taints, tolerations), reasons)
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
    ) -> None:
        sig: AgentSig = (
            tuple(sorted(attributes.items())),
            tuple(agent_taints),
            has_gpus,
            under_pressure,
        )
        self._set_agent_sig(row, sig, framework_rows)

    def set_agent_pressure(
        self, row: int, under_pressure: bool, framework_rows: npt.NDArray[np.intp]
    ) -> bool:
        """The agent's pressure changed: its row again. False (nothing done) if it had not."""
        attrs, agent_taints, has_gpus, was = self.agent_sigs[int(self.agent_sig[row])]
        if was == under_pressure:
            return False
        self._set_agent_sig(row, (attrs, agent_taints, has_gpus, under_pressure), framework_rows)
        return True

    def set_framework_besteffort(
        self, col: int, besteffort: bool, agent_rows: npt.NDArray[np.intp]
    ) -> bool:
        """The framework's wish changed: its column again. False if it had not."""
        tolerations, wanted, gpu_capable, was = self.framework_sigs[int(self.framework_sig[col])]
        if was == besteffort:
            return False
        self._set_framework_sig(col, (tolerations, wanted, gpu_capable, besteffort), agent_rows)
        return True

    def _set_agent_sig(self, row: int, sig: AgentSig, framework_rows: npt.NDArray[np.intp]) -> None:
        agent_taints = sig[1]
        asig = self._agent_sig_ids.get(sig)
        if asig is None:
            asig = self._agent_sig_ids[sig] = len(self.agent_sigs)
            self.agent_sigs.append(sig)
        self.agent_sig[row] = asig
        self.has_soft_taints[row] = any(t.effect.value == "PreferNoSchedule" for t in agent_taints)
        self.ok[row] = False
        self.prefer_not[row] = False
        fsigs = self.framework_sig[framework_rows]
        for fsig in np.unique(fsigs):
            ok, soft, _ = self.pair(asig, int(fsig))
            cols = framework_rows[fsigs == fsig]
            self.ok[row, cols] = ok
            self.prefer_not[row, cols] = soft

    def set_framework(
        self,
        col: int,
        tolerations: Sequence[Toleration],
        wanted: Sequence[AttributeConstraint],
        agent_rows: npt.NDArray[np.intp],
        gpu_capable: bool = False,
        besteffort: bool = False,
    ) -> None:
        sig: FrameworkSig = (tuple(tolerations), tuple(wanted), gpu_capable, besteffort)
        self._set_framework_sig(col, sig, agent_rows)

    def _set_framework_sig(
        self, col: int, sig: FrameworkSig, agent_rows: npt.NDArray[np.intp]
    ) -> None:
        fsig = self._framework_sig_ids.get(sig)
        if fsig is None:
            fsig = self._framework_sig_ids[sig] = len(self.framework_sigs)
            self.framework_sigs.append(sig)
        self.framework_sig[col] = fsig
        self.ok[:, col] = False
        self.prefer_not[:, col] = False
        asigs = self.agent_sig[agent_rows]
        for asig in np.unique(asigs):
            ok, soft, _ = self.pair(int(asig), fsig)
            rows = agent_rows[asigs == asig]
            self.ok[rows, col] = ok
            self.prefer_not[rows, col] = soft
