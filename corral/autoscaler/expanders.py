"""Which node group grows when several could take the pending work: Cluster Autoscaler's
``--expander`` strategies, over the master's options (simulation.py's ``options``: per group,
the nodes it would add, the tasks they would take, and the share of cpus and mem they would
leave idle).

- ``random``: any option (the seeded generator: a replay picks the same).
- ``most-pods``: the most tasks placed.
- ``least-waste``: the least idle cpus share, then mem (Cluster Autoscaler's order).
- ``priority``: the group of the highest ``priority`` (CA's priority expander's config as a
  field of the group); ties: random among them.
- ``price``: the lowest price for the option (nodes x the group's ``price``) per task placed.
Ties in the others go to the group first by name, so an evaluation is deterministic.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from corral.autoscaler.config import Config

Option = Mapping[str, Any]


def choose(name: str, options: Sequence[Option], config: Config, rng: random.Random) -> Option:
    assert options, "choose needs at least one option"
    ordered = sorted(options, key=lambda o: str(o["group"]))
    if name == "random":
        return ordered[rng.randrange(len(ordered))]
    if name == "most-pods":
        return min(ordered, key=lambda o: -int(o["tasks"]))
    if name == "least-waste":
        return min(ordered, key=lambda o: (float(o["waste_cpus"]), float(o["waste_mem"])))
    if name == "priority":
        best = max(_group(config, o).priority for o in ordered)
        top = [o for o in ordered if _group(config, o).priority == best]
        return top[rng.randrange(len(top))] if len(top) > 1 else top[0]
    if name == "price":
        return min(
            ordered,
            key=lambda o: int(o["nodes"]) * _group(config, o).price / max(1, int(o["tasks"])),
        )
    raise ValueError(f"unknown expander {name!r}")


def _group(config: Config, option: Option) -> Any:
    g = config.group(str(option["group"]))
    assert g is not None, f"an option for an unknown group {option['group']}"
    return g
