"""The tick skips its walk of the agents until the earliest heartbeat deadline has passed; it
must still mark every overdue agent UNREACHABLE on the first tick after its deadline, whatever
registrations, heartbeats, disconnects and interval changes came in between."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from corral.master.core import events as ev
from corral.master.core.config import MasterConfig
from corral.master.core.states import AgentState
from tests.unit.core_harness import Harness

# At most 1 heartbeat/s, so the intervals stretch past 5 agents and shrink as they leave.
CONFIG = MasterConfig(
    agent_heartbeat_interval=5, agent_timeout=15, max_agent_heartbeats_per_second=1
)

ops = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(0, 0)),
        st.tuples(st.just("beat"), st.integers(0, 11)),
        st.tuples(st.just("close"), st.integers(0, 11)),
        st.tuples(st.just("reregister"), st.integers(0, 11)),
        st.tuples(st.just("tick"), st.integers(0, 25)),
    ),
    max_size=60,
)


def deadline(h: Harness, aid: str) -> float:
    a = h.core.agents[aid]
    timeout = a.heartbeat_interval * (CONFIG.agent_timeout / CONFIG.agent_heartbeat_interval)
    return max(a.last_seen, a.interval_set_at) + timeout


@settings(max_examples=150, deadline=None)
@given(ops)
def test_every_overdue_agent_is_unreachable_after_each_tick(script: list[tuple[str, int]]) -> None:
    h = Harness(CONFIG)
    ids: list[str] = []
    for op, n in script:
        if op == "add" and len(ids) < 12:
            ids.append(h.add_agent()[0])
        elif op == "tick":
            h.tick(float(n))
            for aid in ids:
                state = h.core.agents[aid].state
                overdue = h.now > deadline(h, aid)
                assert not (state is AgentState.ACTIVE and overdue), (
                    f"{aid} is {h.now - deadline(h, aid):g} s past its deadline and still ACTIVE"
                )
        elif ids:
            aid = ids[n % len(ids)]
            if op == "beat" and h.core.agents[aid].connection is not None:
                h.handle(ev.AgentHeartbeat(**h.base(), agent_id=aid, connection=h.connections[aid]))
            elif op == "close" and h.core.agents[aid].connection is not None:
                h.close_agent(aid)
            elif op == "reregister":
                h.add_agent(agent_id=aid)
