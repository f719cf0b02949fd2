"""The master's invariants, asserted on an Operator ``GetState`` answer after fuzzed calls:
offers each once, of an active agent, to a connected framework; no agent's free resources
negative; an agent's "offered" and "used" the sums of its offers and live tasks; no port in two
places; every live task once, on a known agent, under a known framework."""

from __future__ import annotations

import collections
import itertools
import math
from collections.abc import Iterable

from corral.resources import SCALARS
from corral.tasks import TERMINAL_STATES
from corral.v1 import common_pb2 as pb
from corral.v1 import operator_pb2 as op

TERMINAL = frozenset(int(state) for state in TERMINAL_STATES)  # the wire's numbers


def _scalars(r: pb.Resources) -> dict[str, float]:
    return {n: getattr(r, n) for n in SCALARS}


def _ports(r: pb.Resources) -> list[tuple[int, int]]:
    return [(p.begin, p.end) for p in r.ports]


def _within(ranges: Iterable[tuple[int, int]], total: list[tuple[int, int]]) -> bool:
    return all(any(b >= tb and e <= te for tb, te in total) for b, e in ranges)


def _overlap(ranges: list[tuple[int, int]]) -> bool:
    ranges = sorted(ranges)
    return any(b2 <= e1 for (_, e1), (b2, _) in itertools.pairwise(ranges))


def check_state(state: op.State) -> None:
    """The master's invariants on one GetState answer; an AssertionError names the broken one."""
    agents = {a.info.id: a for a in state.agents}
    assert len(agents) == len(state.agents), "an agent id appears twice in the state"
    frameworks = {f.info.id: f for f in state.frameworks}
    # Offers: each id once, of a known active agent, to a known connected framework.
    offered: dict[str, dict[str, float]] = collections.defaultdict(
        lambda: dict.fromkeys(SCALARS, 0.0)
    )
    offered_ports: dict[str, list[tuple[int, int]]] = collections.defaultdict(list)
    seen: set[str] = set()
    for o in state.offers:
        assert o.id not in seen, f"offer {o.id} is outstanding twice"
        seen.add(o.id)
        agent = agents.get(o.agent_id)
        assert agent is not None, f"offer {o.id} is of unknown agent {o.agent_id}"
        assert agent.active, f"offer {o.id} is of agent {o.agent_id}, which is not active"
        fw = frameworks.get(o.framework_id)
        assert fw is not None, f"offer {o.id} is to unknown framework {o.framework_id}"
        assert fw.connected, f"offer {o.id} is to framework {o.framework_id}, not connected"
        for n, v in _scalars(o.resources).items():
            assert v >= 0 and math.isfinite(v), f"offer {o.id} has {n}={v}"
            offered[o.agent_id][n] += v
        assert _within(_ports(o.resources), _ports(agent.info.resources)), (
            f"offer {o.id} has ports {_ports(o.resources)} outside agent {o.agent_id}'s "
            f"{_ports(agent.info.resources)}"
        )
        offered_ports[o.agent_id] += _ports(o.resources)
    # Tasks: a live task is on exactly one known agent, under a known framework.
    live_used: dict[str, dict[str, float]] = collections.defaultdict(
        lambda: dict.fromkeys(SCALARS, 0.0)
    )
    where: dict[tuple[str, str], str] = {}
    for t in state.tasks:
        if t.status.state in TERMINAL:
            continue
        key = (t.info.framework_id, t.info.task_id)
        assert key not in where, (
            f"live task {key} appears twice: on agents {where[key]} and {t.info.agent_id}"
        )
        where[key] = t.info.agent_id
        assert t.info.agent_id in agents, f"live task {key} is on unknown agent {t.info.agent_id}"
        assert t.info.framework_id in frameworks, f"live task {key}'s framework is unknown"
        for n, v in _scalars(t.info.resources).items():
            live_used[t.info.agent_id][n] += v
    # Agents: used + offered within the total: no negative free resource, no overbooking.
    for aid, a in agents.items():
        total, used = _scalars(a.info.resources), _scalars(a.used)
        for n in SCALARS:
            slack = 1e-6 * max(1.0, abs(total[n]))
            free = total[n] - used[n] - offered[aid][n]
            assert used[n] >= -slack, f"agent {aid} uses {n}={used[n]}"
            assert free >= -slack, (
                f"agent {aid}: negative free {n} ({free}): total {total[n]}, used {used[n]}, "
                f"offered {offered[aid][n]}"
            )
            assert abs(_scalars(a.offered)[n] - offered[aid][n]) <= slack, (
                f"agent {aid}: reported offered {n} {_scalars(a.offered)[n]} is not the sum of "
                f"its outstanding offers {offered[aid][n]}"
            )
            assert abs(used[n] - live_used[aid][n]) <= slack, (
                f"agent {aid}: used {n} {used[n]} is not the sum of its live tasks "
                f"{live_used[aid][n]}"
            )
        assert not _overlap(offered_ports[aid]), (
            f"agent {aid}: one port is in two outstanding offers: {sorted(offered_ports[aid])}"
        )
        assert not _overlap(offered_ports[aid] + _ports(a.used)), (
            f"agent {aid}: an offered port is in use: offered {sorted(offered_ports[aid])}, "
            f"used {_ports(a.used)}"
        )
