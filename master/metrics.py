"""Prometheus metrics of one master (own registry, so several masters can share a process)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from corral.master.batch_histogram import BatchHistogram

_CYCLE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
_LATENCY_BUCKETS = (
    0.001,
    0.002,
    0.005,
    0.01,
    0.02,
    0.05,
    0.1,
    0.2,
    0.35,
    0.5,
    0.75,
    1.0,
    1.5,
    2.0,
    3.0,
    5.0,
    10.0,
)
_LAG_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class AgentMemory(Collector):
    """``corral_agent_memory_used_mib`` and ``corral_agent_memory_available_mib`` per agent
    that reports usage, from the last snapshot (``usage_metrics.refresh``)."""

    def __init__(self) -> None:
        self.snapshot: list[tuple[str, float, float]] = []  # (agent id, used, available)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        used = GaugeMetricFamily(
            "corral_agent_memory_used_mib",
            "MiB the agent's tasks use, as it last measured (agents that report usage)",
            labels=["agent"],
        )
        available = GaugeMetricFamily(
            "corral_agent_memory_available_mib",
            "The agent's mem less what its tasks use: what eviction thresholds compare",
            labels=["agent"],
        )
        for agent_id, u, a in self.snapshot:
            used.add_metric((agent_id,), u)
            available.add_metric((agent_id,), a)
        yield used
        yield available


class MessageTally(Collector):
    """``grpc_server_msg_received_total`` and ``grpc_server_msg_sent_total`` per method, with
    go-grpc-prometheus' names and labels so its dashboards read them: a message costs the
    master more than most of what it carries (issue #18), so messages per launched task is the
    figure that says where its CPU goes. Counted as plain integers, not prometheus Counters,
    whose lock per ``inc`` was 1.3 % of a master registering 50,000 agents: every message is
    counted on the event loop's thread, which serves the scrape too."""

    def __init__(self) -> None:
        # (grpc_type, service, method) -> [received, sent]
        self._counts: dict[tuple[str, str, str], list[int]] = {}

    def counters(
        self, grpc_type: str, service: str, method: str
    ) -> tuple[Callable[[], None], Callable[[], None]]:
        """(count one received, count one sent) for a method (rpc_checked.add_servicer)."""
        cell = self._counts.setdefault((grpc_type, service, method), [0, 0])

        def received() -> None:
            cell[0] += 1

        def sent() -> None:
            cell[1] += 1

        return received, sent

    def collect(self) -> Iterator[CounterMetricFamily]:
        labels = ["grpc_type", "grpc_service", "grpc_method"]
        received = CounterMetricFamily(
            "grpc_server_msg_received",
            "Messages received on a method (requests, and each message of a request stream)",
            labels=labels,
        )
        sent = CounterMetricFamily(
            "grpc_server_msg_sent",
            "Messages handed to gRPC to send on a method (responses, each of a stream)",
            labels=labels,
        )
        for key, (r, s) in self._counts.items():
            received.add_metric(key, r)
            sent.add_metric(key, s)
        yield received
        yield sent


class MasterMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.allocation_cycle = Histogram(
            "corral_allocation_cycle_seconds",
            "Time of one allocation cycle (allocator plus applying its plan)",
            buckets=_CYCLE_BUCKETS,
            registry=r,
        )
        self.registry_writes = Histogram(
            "corral_registry_write_seconds",
            "Time to make one loop turn's registry changes durable",
            buckets=_CYCLE_BUCKETS,
            registry=r,
        )
        self.registry_read = Gauge(
            "corral_registry_read_seconds",
            "Time this master took to read the registry when it started leading",
            registry=r,
        )
        self.offers_sent = Counter("corral_offers_sent", "Offers sent to frameworks", registry=r)
        self.denied = Counter(
            "corral_denied",
            "Calls refused by the ACLs or for their identity (PERMISSION_DENIED, HTTP 403), by "
            "action (corral/acl.py's ACTIONS)",
            ["action"],
            registry=r,
        )
        self.acl_reloads = Counter(
            "corral_acl_reloads",
            "ACL files read after a change, by result (loaded, rejected: the old ACL stays)",
            ["result"],
            registry=r,
        )
        self.offers_declined = Counter(
            "corral_offers_declined", "Offer ids declined by frameworks", registry=r
        )
        self.offers_rescinded = Counter("corral_offers_rescinded", "Offers rescinded", registry=r)
        self.stream_queue_bytes = Gauge(
            "corral_stream_queue_bytes",
            "The largest estimated bytes queued unsent on one stream, by kind",
            ["kind"],
            registry=r,
        )
        self.stream_queue_peak_bytes = Gauge(
            "corral_stream_queue_peak_bytes",
            "The most estimated bytes one stream's queue ever held, by kind "
            "(at most --stream-queue-mib)",
            ["kind"],
            registry=r,
        )
        self.streams_cut = Counter(
            "corral_streams_cut",
            "Streams ended because their peer fell too far behind, by kind",
            ["kind"],
            registry=r,
        )
        self.offers_expired = Counter(
            "corral_offers_expired",
            "Offers rescinded because they were outstanding past --offer-timeout",
            registry=r,
        )
        self.accepts = Counter("corral_accepts", "ACCEPT calls that succeeded", registry=r)
        self.agent_heartbeats = Counter(
            "corral_agent_heartbeats",
            "HEARTBEATs received from agents (an agent that sent anything else sends none)",
            registry=r,
        )
        self.tasks_launched = Counter(
            "corral_tasks_launched", "Tasks sent to agents for launch", registry=r
        )
        self.status_updates = Counter(
            "corral_status_updates", "Status updates received from agents", ["state"], registry=r
        )
        self.status_update_lag = Histogram(
            "corral_status_update_lag_seconds",
            "From the agent's status timestamp to the master forwarding it",
            buckets=_LAG_BUCKETS,
            registry=r,
        )
        self.offer_latency = BatchHistogram(  # one observation per offer: batched
            "corral_offer_latency_seconds",
            "From an agent's resources coming back (task end, decline, accept leftover) to the "
            "next offer of that agent",
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.launch_latency = BatchHistogram(  # one observation per launch: batched
            "corral_task_launch_latency_seconds",
            "From the ACCEPT that launched a task to its RUNNING status reaching the master",
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.calls_rejected = Counter(
            "corral_calls_rejected", "Framework calls refused", ["code"], registry=r
        )
        # Issue #30, master/core/quarantine.py: what the allocation tick isolated, by its pass.
        self.quarantined = Counter(
            "corral_quarantined",
            "Demands quarantined because a unit of the allocation tick (preemption, gang cut, "
            "why-pending) raised on them, by pass",
            ["what"],
            registry=r,
        )
        self.allocation_failing = Gauge(
            "corral_allocation_ticks_failing",
            "Allocation ticks in a row that failed as a whole (0 when the last one ran)",
            registry=r,
        )
        self.operator_actions = Counter(
            "corral_operator_actions",
            "Operators' actions (KillTasks, TeardownFramework, Cordon, Uncordon, Drain, "
            "DeleteAgent) by outcome: OK or the refusal's code",
            ["action", "outcome"],
            registry=r,
        )
        self.task_file_reads = Counter(
            "corral_task_file_reads",
            "Reads of tasks' sandbox files through their agents (corral logs), by outcome",
            ["outcome"],
            registry=r,
        )
        # Admission control (issue #18, master/core/admission.py): the bounds at work.
        self.accepts_refused = Counter(
            "corral_accepts_refused",
            "ACCEPT calls refused at once (RESOURCE_EXHAUSTED) because a backlog bound was "
            "reached, by bound (waiting_accepts, agent_launches, framework_statuses)",
            ["bound"],
            registry=r,
        )
        self.accepts_waiting = Gauge(
            "corral_accepts_waiting",
            "ACCEPT calls waiting for the core (at most --max-waiting-accepts)",
            registry=r,
        )
        self.accepts_waiting_peak = Gauge(
            "corral_accepts_waiting_peak",
            "The most ACCEPT calls ever waiting for the core at once",
            registry=r,
        )
        self.cycles_held = Counter(
            "corral_allocation_cycles_held",
            "Allocation cycles that offered nothing because accepts were waiting",
            registry=r,
        )
        self.launches_in_flight = Gauge(
            "corral_launches_in_flight",
            "Tasks accepted and not yet RUNNING (STAGING or STARTING), all agents",
            registry=r,
        )
        self.agent_launches_max = Gauge(
            "corral_agent_launches_in_flight_max",
            "The most tasks launching on one agent (at most --max-agent-launches)",
            registry=r,
        )
        self.agents_held = Gauge(
            "corral_agents_held",
            "Agents offered to nobody because their launches in flight reached the bound",
            registry=r,
        )
        self.launch_window = Gauge(
            "corral_launch_window_cpus",
            "Launch pacing's window: the cpus that may be launching at once",
            registry=r,
        )
        self.pending_statuses_max = Gauge(
            "corral_framework_pending_statuses_max",
            "The most status updates one framework has not acknowledged "
            "(at most --max-framework-pending-statuses, plus those of tasks already admitted)",
            registry=r,
        )
        self.event_failures = Counter(
            "corral_event_failures",
            "Events whose handling raised (a bug): refused, logged as core_failed",
            ["event"],
            registry=r,
        )
        self.background_task_failures = Counter(
            "corral_background_task_failures",
            "Background tasks that ended unexpectedly (a runtime loop: the master stops)",
            ["task"],
            registry=r,
        )
        self.events_processed = Counter(
            "corral_events_processed", "Events handled by the master core", registry=r
        )
        self.events_dropped = Counter(
            "corral_events_dropped",
            "Cluster events pushed out of the bounded event log (the oldest go first)",
            registry=r,
        )
        self.inbox_depth = Gauge("corral_inbox_depth", "Events waiting for the core", registry=r)
        self.agents = Gauge("corral_agents", "Agents by state", ["state"], registry=r)
        self.agents_connected = Gauge(
            "corral_agents_connected",
            "Agents with a registered stream to this master (ACTIVE ones whose stream broke "
            "are not: a loss wave shows here before any agent is UNREACHABLE)",
            registry=r,
        )
        self.frameworks = Gauge("corral_frameworks", "Frameworks by state", ["state"], registry=r)
        self.tasks_active = Gauge("corral_tasks_active", "Tasks not yet terminal", registry=r)
        self.offers_outstanding = Gauge(
            "corral_offers_outstanding", "Offers not yet answered", registry=r
        )
        # Usage, pressure and revocable resources (agents' usage reports; usage_metrics.py).
        # Per agent: two series each, at 50,000 agents 100,000 series. Kept as one snapshot the
        # scrape takes on the core's task and yields as it is (AgentMemory), not as a Gauge
        # child per agent: labels() and clear() over 50,000 children cost a core-second a
        # scrape (docs/performance.md, "Scraping /metrics at 50,000 agents").
        self.agent_memory = AgentMemory()
        r.register(self.agent_memory)
        self.agents_under_pressure = Gauge(
            "corral_agents_under_memory_pressure",
            "Agents reporting memory pressure (no BestEffort work placed on them), by level",
            ["level"],
            registry=r,
        )
        self.revocable = Gauge(
            "corral_revocable_resources",
            "Revocable resources over all agents: estimated (lendable), held by revocable tasks, "
            "offered",
            ["resource", "kind"],
            registry=r,
        )
        self.tasks_killed_by_agent = Counter(
            "corral_tasks_killed_by_agent",
            "Tasks an agent ended on its own, by reason: Evicted (memory pressure), Reclaimed "
            "(revocable resources taken back), OOMKilled (over the memory limit)",
            ["reason"],
            registry=r,
        )
        self.messages = MessageTally()  # grpc_server_msg_{received,sent}_total
        r.register(self.messages)
        # process_cpu_seconds_total, process_resident_memory_bytes, ... of this process.
        ProcessCollector(registry=r)
