"""What a view needs of its agents that only their specs decide (agent_view.py): kept across
scans."""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np
import numpy.typing as npt

from corral.master.allocator import rules
from corral.master.allocator.rules import AgentFacts
from corral.master.core import placement_facts
from corral.master.core.records import AgentRecord
from corral.resources import SCALARS


class Statics:
    """What a view needs of its agents that only their specs decide: ids, totals, taint and
    attribute signatures. Kept across scans (agent_arrays.py) while the agents and their
    specs are the same objects; rebuilt from ``previous`` when they change, so only the
    agents that changed get a new signature."""

    def __init__(self, agents: Sequence[AgentRecord], previous: Statics | None = None) -> None:
        """``previous``: statics of other agents, whose work for an agent still the same
        (same record, spec and pressure) is taken, not redone."""
        self.agents = list(agents)
        self.specs = [a.spec for a in self.agents]
        self.ids = [s.agent_id for s in self.specs]
        self.index = {aid: i for i, aid in enumerate(self.ids)}
        n = len(self.agents)
        self.totals = np.array(
            [s.resources.scalars() for s in self.specs], dtype=np.float64
        ).reshape(n, len(SCALARS))
        rule_sigs: dict[Hashable, int] = {}
        attr_sigs: dict[tuple[tuple[str, str], ...], int] = {}
        rules_of: list[int] = []
        attrs_of: list[int] = []
        self.rule_sets: list[AgentFacts] = []  # one agent's facts per rule signature
        self.attr_sets: list[dict[str, str]] = []  # for spread's domains
        # Memory pressure is a fact of the agent that changes without a new spec: kept to
        # tell when these statics no longer fit.
        self.pressure = [a.under_pressure for a in self.agents]
        # Per agent: its facts, their rule key, its attributes' key.
        self.facts: list[tuple[AgentFacts, Hashable, tuple[tuple[str, str], ...]]] = []
        for agent, spec, under_pressure in zip(self.agents, self.specs, self.pressure, strict=True):
            j = previous.index.get(spec.agent_id) if previous is not None else None
            if (
                previous is not None
                and j is not None
                and previous.agents[j] is agent
                and previous.specs[j] is spec
                and previous.pressure[j] == under_pressure
            ):
                known = previous.facts[j]
            else:
                facts = placement_facts.agent_facts(spec, under_pressure)
                attributes = spec.attributes
                known = (
                    facts,
                    rules.agent_key(facts),
                    tuple(sorted(attributes.items())) if attributes else (),
                )
            self.facts.append(known)
            facts, key, attrs = known
            s = rule_sigs.get(key)
            if s is None:
                s = rule_sigs[key] = len(self.rule_sets)
                self.rule_sets.append(facts)
            rules_of.append(s)
            a = attr_sigs.get(attrs)
            if a is None:
                a = attr_sigs[attrs] = len(self.attr_sets)
                self.attr_sets.append(spec.attributes)
            attrs_of.append(a)
        self.rules_of = np.array(rules_of, dtype=np.int64)
        self.attrs_of = np.array(attrs_of, dtype=np.int64)
        self.held_ids: Sequence[str] | None = None  # the HeldBack order last placed
        self.held_at: npt.NDArray[np.intp] | None = None  # its positions here (None: same)

    def built_from(self, agents: Sequence[AgentRecord]) -> bool:
        """These are the agents (and specs, and pressure) it was built from, in the same
        order."""
        return (
            len(agents) == len(self.agents)
            and all(
                a is b and a.spec is s
                for a, b, s in zip(agents, self.agents, self.specs, strict=True)
            )
            and [a.under_pressure for a in agents] == self.pressure
        )
