"""The core's clock: what a Tick does (the heartbeat deadlines it keeps are clocks.py's).

Rules (each tick, in this order):
1. An ACTIVE agent not heard from for its timeout (as many heartbeat intervals as
   ``agent_timeout`` allows at the base interval) is marked UNREACHABLE (membership.py rule
   6), at most ``agent_removal_rate`` a second. The agents are walked only once the earliest
   deadline has passed: deadlines only move later as agents are heard from, and a
   registration or a new interval brings the earliest forward (``watch_deadline``).
2. After a master restart, agents still RECOVERING ``agent_reregister_timeout`` after it are
   marked UNREACHABLE, under the same rate limit.
3. When agents came or went since the last tick, agents whose heartbeat interval is more than
   25 % shorter than the one the cluster's size calls for (``heartbeat_interval_for``: at most
   ``max_agent_heartbeats_per_second`` from all agents together; the size counts the ACTIVE
   agents, connected or with a broken stream (expected back until their timeout), and the
   RECOVERING, expected back after a restart, ``AgentTable.heartbeating``, and a registration
   is told the same, a new agent with the growth headroom below: a partition that heals
   re-tells nobody) are told that one times
   ``GROWTH_HEADROOM`` (the cluster grew: it may grow on, and a re-tell costs a message per
   agent), and those more than 25 % longer than the headroom allows (it shrank) are told that
   one. A cluster growing from 2,500 to 50,000 agents re-tells every 56 % of growth, not every
   25 %: 2.1 messages per agent in a replay of the ramp (80 registrations a tick), 1.7 since a
   new agent is told the headroom at its registration (docs/performance.md, "50,000 agents"); the
   heartbeat rate stays within 25 % of the cap, as before. The agents off the band come from
   heaps of what each was told (``Clocks.off_band``), not from a walk of every agent.
4. Offers outstanding past ``offer_timeout`` go back as declined: the framework is filtered on
   those agents, longer each time it lets them expire again (offer_expiry.py).
5. A framework DISCONNECTED past its failover timeout is removed; a SUBSCRIBED one whose
   stream has drained is sent its statuses unacknowledged for ``status_retry_interval``, at
   most one UPDATE's worth (``resend``).
6. Agents UNREACHABLE past ``registry_max_agent_age``, and the oldest past
   ``registry_max_agent_count``, are forgotten (pruning.py).
"""

from __future__ import annotations

import math
from itertools import islice
from typing import TYPE_CHECKING

from corral.master.core import commands as cmd
from corral.master.core import events as ev
from corral.master.core import membership, pruning, subscriptions
from corral.master.core.clocks import (
    GROWTH_HEADROOM,
    agent_timeout,
    deadline,
    heartbeat_interval_for,
)
from corral.master.core.states import AgentState, FrameworkState
from corral.master.core.statuses import RESEND_BATCH, resend

if TYPE_CHECKING:
    from corral.master.core.state import CoreState

Commands = list[cmd.Command]


_BAND = 1.25  # how far off an interval may be before it is re-told


def _retell_heartbeat_intervals(core: CoreState, e: ev.Tick) -> Commands:
    target = heartbeat_interval_for(core.config, core.agent_table)
    # A band either way, so a cluster that grows by a few agents does not send every agent a
    # new interval on every tick; wider upwards by the headroom rule 3 tells a growing cluster.
    low, high = target / _BAND, target * _BAND * GROWTH_HEADROOM
    clocks = core.clocks
    out: Commands = []
    for agent in clocks.off_band(low, high, core.agents):
        told = target * GROWTH_HEADROOM if agent.heartbeat_interval < low else target
        agent.heartbeat_interval = told
        agent.interval_set_at = e.now
        clocks.watch_deadline(core.config, agent)
        clocks.told(agent, core.agents)
        out.append(
            cmd.SendHeartbeatInterval(
                stimulus_id=e.stimulus_id,
                agent_id=agent.agent_id,
                heartbeat_interval=told,
            )
        )
    return out


def tick(core: CoreState, e: ev.Tick) -> Commands:
    """The module's rules 1 to 6, in that order."""
    out: Commands = []
    now = e.now
    if now > core.clocks.earliest_deadline:
        earliest = math.inf
        for agent in list(core.agents.values()):
            if agent.state is not AgentState.ACTIVE:
                continue
            due = deadline(core.config, agent)
            if now <= due:
                earliest = min(earliest, due)
            elif core.clocks.may_mark_unreachable(core.config, now):
                timeout = agent_timeout(core.config, agent)
                out += membership.unreachable(core, agent, e, f"no heartbeat for {timeout:g}s")
            else:
                earliest = now  # held back by the rate limit: again at the next tick
        core.clocks.earliest_deadline = earliest
    if core.recovering and now > core.clocks.recovery_deadline:
        why = (
            f"did not re-register within {core.config.agent_reregister_timeout:g}s of the "
            "master's restart"
        )
        for agent in list(core.agents.values()):
            if agent.state is AgentState.RECOVERING and core.clocks.may_mark_unreachable(
                core.config, now
            ):
                out += membership.unreachable(core, agent, e, why)
    if core.clocks.intervals_dirty:
        core.clocks.intervals_dirty = False
        out += _retell_heartbeat_intervals(core, e)
    if core.config.offer_timeout > 0:
        out += _expire_offers(core, e)
    for fw in list(core.frameworks.values()):
        if fw.state is FrameworkState.DISCONNECTED and fw.disconnected_at is not None:
            timeout = fw.spec.failover_timeout or core.config.framework_failover_timeout
            if now - fw.disconnected_at > timeout:
                out += subscriptions.remove(core, fw, e, f"failover timeout ({timeout:g}s) ran out")
        elif (
            fw.state is FrameworkState.SUBSCRIBED
            and fw.pending
            and fw.framework_id not in e.backlogged
        ):
            retry = core.config.status_retry_interval
            late = (p for p in fw.pending.values() if now - p.last_sent >= retry)
            out += resend(fw, list(islice(late, RESEND_BATCH)), e)
    out += pruning.prune(core, e)
    return out


def _expire_offers(core: CoreState, e: ev.Tick) -> Commands:
    """Rule 4: offers outstanding past the offer timeout go back, as declined ones do."""
    core.expiries.sweep(e.now)
    rescinds, per_fw = core.book.expire(e.now - core.config.offer_timeout, e.stimulus_id)
    out: Commands = list(rescinds)
    for fw_id, held in per_fw.items():
        core.pacer.declined(len(held))
        seconds = core.expiries.expired(fw_id, held.items(), e.now)
        out.append(
            core.cluster_event(
                e,
                "offers_expired",
                fw_id,
                f"offers of {len(held)} agents unanswered for {core.config.offer_timeout:g}s "
                f"rescinded, and taken as declined: not offered to it again for {seconds:g}s "
                "(longer each time its offers run out)",
            )
        )
    return out
