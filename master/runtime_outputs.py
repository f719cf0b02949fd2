"""What the master's runtime does with a loop turn's results and for its metrics: the outbox's
messages onto their streams (``flush``), cluster events to the log and the watchers
(``publish``), latency and status counts observed as status batches arrive, and the state
gauges set for a scrape (``refresh_gauges``). Run on the core's task, as the runtime's own."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

import numpy as np

from corral import events as cluster_events
from corral.logging import get_logger
from corral.master import usage_metrics as usage
from corral.master.core import commands as cmd
from corral.master.core import events as ev
from corral.master.core.states import FrameworkState
from corral.master.core.types import TaskState
from corral.master.outbox import Outbox
from corral.v1 import scheduler_pb2

if TYPE_CHECKING:
    from corral.master.runtime import MasterRuntime

log = get_logger("corral.master")

# Tasks an agent ended on its own (eviction, revocable reclaim, memory limit): counted by reason.
_KILLED_BY_AGENT = frozenset(
    {cluster_events.EVICTED, cluster_events.RECLAIMED, cluster_events.OOM_KILLED}
)


# Offer latency comes from the core (take_offer_waits: it sees resources come back as it
# returns them). Launch latency is a read-only look at the core's state from its own task,
# before it handles a status batch: "launched" is the accept time the core keeps per task.


def observe_launches(rt: MasterRuntime, item: ev.AgentStatusUpdates) -> None:
    agent = rt.core.agents.get(item.agent_id)
    if agent is None:
        return
    # One histogram call per status batch: a call per status (a lock and a walk over the
    # buckets each) was 4 % of the master's CPU in the 1k x 50 load test.
    tasks, now, running = agent.tasks, item.now, TaskState.RUNNING
    latencies = []
    for s in item.statuses:
        if s.state is running:
            task = tasks.get((s.framework_id, s.task_id))
            if task is not None and task.state is not running:
                latencies.append(now - task.launched_at)
    if latencies:
        rt.metrics.launch_latency.observe_many(np.maximum(latencies, 0.0))


def observe_statuses(rt: MasterRuntime, item: ev.AgentStatusUpdates) -> None:
    m = rt.metrics
    now = item.now
    by_state: dict[str, int] = {}
    oldest = now
    for s in item.statuses:
        name = s.state.name
        by_state[name] = by_state.get(name, 0) + 1
        if 0 < s.timestamp < oldest:
            oldest = s.timestamp
    # One observation per batch (its oldest status): a histogram per status costs more
    # than handling the status.
    if item.statuses:
        m.status_update_lag.observe(now - oldest)
    for name, n in by_state.items():
        child = rt._status_counters.get(name)
        if child is None:
            child = rt._status_counters[name] = m.status_updates.labels(name)
        child.inc(n)


def flush(rt: MasterRuntime, outbox: Outbox) -> None:
    for fw_id, stream_id in outbox.subscribed:
        stream = rt.framework_streams.get(stream_id)
        if stream is None:
            continue
        rt._stream_of_framework[fw_id] = stream_id
        rt._framework_of_stream[stream_id] = fw_id
        stream.put(
            scheduler_pb2.Event(
                subscribed=scheduler_pb2.Subscribed(
                    framework_id=fw_id,
                    stream_id=stream_id,
                    heartbeat_interval_seconds=rt.config.framework_heartbeat_interval,
                    master_id=rt.master_id,
                    epoch=rt.core.epoch,
                )
            )
        )
    for stream_id, msg in outbox.stream_msgs:
        stream = rt.framework_streams.get(stream_id)
        if stream is None:
            continue
        if msg is None:
            stream.end()
        else:
            stream.put(msg)
    for fw_id, msgs in outbox.framework_msgs.items():
        stream = rt.framework_streams.get(rt._stream_of_framework.get(fw_id, ""))
        if stream is None:
            continue  # disconnected: pending statuses are resent on re-subscription
        for fmsg in msgs:
            for wire, size in outbox.wire(fmsg):
                stream.put(wire, size)
    epoch = rt.core.epoch
    for conn, amsg in outbox.conn_msgs:
        astream = rt.agent_streams.get(conn)
        if astream is None:
            continue
        if amsg is not None and amsg.HasField("registered"):
            rt._connection_of_agent[amsg.registered.agent_id] = conn
            rt._agent_of_connection[conn] = amsg.registered.agent_id
            amsg.registered.master_id = rt.master_id
        if amsg is None:
            astream.end()
        else:
            if epoch:
                amsg.epoch = epoch
            astream.put(amsg)
    for agent_id, amsgs in outbox.agent_msgs.items():
        astream = rt.agent_streams.get(rt._connection_of_agent.get(agent_id, -1))
        if astream is None:
            continue
        for one, size in zip(amsgs, outbox.agent_sizes[agent_id], strict=True):
            if epoch:
                one.epoch = epoch  # every command carries it: agents fence on it
            astream.put(one, size)
    publish(rt, outbox.cluster_events)
    m = rt.metrics
    counts = rt._counts
    m.events_processed.inc(counts["events"])
    m.accepts.inc(counts["accepts"])
    m.offers_declined.inc(counts["declined"])
    m.agent_heartbeats.inc(counts["heartbeats"])
    counts["events"] = counts["accepts"] = counts["declined"] = counts["heartbeats"] = 0
    m.offers_sent.inc(outbox.offers_sent)
    m.offers_rescinded.inc(outbox.rescinded)
    m.tasks_launched.inc(outbox.launched)


def publish(rt: MasterRuntime, events: list[cmd.ClusterEvent]) -> None:
    """Cluster events into the bounded log, to the watchers, and (but the frequent ones)
    to the master's log."""
    dropped = 0
    for event in events:
        if rt.recent_events.append(event):
            dropped += 1  # counted once per turn: a full log drops one per task that ends
        for q in list(rt._watchers) if rt._watchers else ():
            if q.full():
                rt._watchers.discard(q)  # a watcher that stopped reading loses its watch
            else:
                q.put_nowait(event)
        if event.reason in _KILLED_BY_AGENT:
            rt.metrics.tasks_killed_by_agent.labels(event.reason).inc()
        if event.reason not in cluster_events.QUIET:
            log.info(
                event.kind,
                reason=event.reason,
                subject=event.subject,
                detail=event.message,
                stimulus_id=event.stimulus_id,
            )
    if dropped:
        rt.metrics.events_dropped.inc(dropped)


def refresh_gauges(rt: MasterRuntime) -> None:
    """Set the state gauges from the core (called by the core task, via query)."""
    core = rt.core
    m = rt.metrics
    # Kept as agents move (agent_table.py): a count over 50,000 agents was ~5 ms a scrape.
    for state, n in core.agent_table.by_state.items():
        m.agents.labels(state.value).set(n)
    m.agents_connected.set(rt.agents_connected())
    framework_states = Counter(f.state for f in core.frameworks.values())
    for fstate in FrameworkState:
        m.frameworks.labels(fstate.value).set(framework_states[fstate])
    m.tasks_active.set(sum(len(f.tasks) for f in core.frameworks.values()))
    m.offers_outstanding.set(len(core.offers))
    usage.refresh(m, core)
    per_agent = core.pacer.launching_per_agent()  # admission control (admission.py)
    m.launches_in_flight.set(sum(per_agent.values()))
    m.agent_launches_max.set(max(per_agent.values(), default=0))
    m.agents_held.set(len(core.holds.held))
    m.launch_window.set(core.pacer.window)
    m.pending_statuses_max.set(max((len(f.pending) for f in core.frameworks.values()), default=0))
    m.accepts_waiting.set(rt.accepts_waiting)
    m.accepts_waiting_peak.set(rt.accepts_waiting_peak)
    for kind in ("framework", "agent"):
        stats = rt.stream_stats.get(kind)
        holding = stats.holding if stats is not None else ()
        m.stream_queue_bytes.labels(kind).set(max((s.queued_bytes for s in holding), default=0))
        m.stream_queue_peak_bytes.labels(kind).set(stats.peak if stats is not None else 0)
