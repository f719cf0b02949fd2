"""The autoscaler's Prometheus figures, read from the service at each scrape (nothing is kept
twice): the names follow Kubernetes' cluster-autoscaler where one exists there
(``cluster_autoscaler_nodes_count``, ``scaled_up_nodes_total``, ``scaled_down_nodes_total``,
``failed_scale_ups_total``), under ``corral_autoscaler_``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

if TYPE_CHECKING:
    from corral.autoscaler.service import AutoscalerService

PHASES = ("creating", "ready", "draining")


class AutoscalerMetrics:
    """A collector for the service's ``/metrics`` (none before this process leads)."""

    def __init__(self, service: Callable[[], AutoscalerService]) -> None:
        self.service = service

    def collect(self) -> Iterator[Metric]:
        try:
            s = self.service()
        except AssertionError:  # a standby: the scaffold has not started the service
            return
        yield CounterMetricFamily(
            "corral_autoscaler_evaluations", "Evaluations finished", value=s.evaluations
        )
        yield GaugeMetricFamily(
            "corral_autoscaler_last_evaluation_seconds",
            "How long the last evaluation took (the master's what-if included)",
            value=s.last_eval_ms / 1000,
        )
        yield GaugeMetricFamily(
            "corral_autoscaler_evaluation_failing",
            "1 while the last evaluation failed (the master did not answer, or a bug)",
            value=1.0 if s.last_error else 0.0,
        )
        nodes = GaugeMetricFamily(
            "corral_autoscaler_nodes", "Nodes taken by the autoscaler", labels=["group", "phase"]
        )
        bounds = GaugeMetricFamily(
            "corral_autoscaler_node_group_bound", "A group's min and max", labels=["group", "bound"]
        )
        backoff = GaugeMetricFamily(
            "corral_autoscaler_node_group_backoff_seconds",
            "Seconds before a group that failed to grow may grow again",
            labels=["group"],
        )
        for g in s.nodegroups():
            for phase, key in zip(PHASES, ("upcoming", "ready", "draining"), strict=True):
                nodes.add_metric([g["name"], phase], g[key])
            bounds.add_metric([g["name"], "min"], g["min"])
            bounds.add_metric([g["name"], "max"], g["max"])
            backoff.add_metric([g["name"]], g["backoff_seconds"])
        yield nodes
        yield bounds
        yield backoff
        for name, doc, counts in (
            ("scaled_up_nodes", "Nodes asked of a provider", s.scaled_up),
            ("scaled_down_nodes", "Nodes deleted once drained", s.scaled_down),
        ):
            family = CounterMetricFamily(f"corral_autoscaler_{name}", doc, labels=["group"])
            for group, n in sorted(counts.items()):
                family.add_metric([group], n)
            yield family
        events = CounterMetricFamily(
            "corral_autoscaler_events",
            "The autoscaler's events by reason (TriggeredScaleUp, FailedToScaleUp, ScaleDown, "
            "ScaleDownFailed, NotTriggerScaleUp, ...)",
            labels=["reason"],
        )
        for reason, n in sorted(s.event_counts.items()):
            events.add_metric([reason], n)
        yield events
