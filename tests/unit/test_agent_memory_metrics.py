"""The per-agent memory series of the master's /metrics (master/metrics.AgentMemory): one
snapshot taken at each scrape, as Prometheus parses it; an agent gone since the last scrape
leaves no series behind."""

from __future__ import annotations

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from corral.master.metrics import MasterMetrics


def series(m: MasterMetrics) -> dict[tuple[str, str], float]:
    text = generate_latest(m.registry).decode()
    return {
        (s.name, s.labels["agent"]): s.value
        for family in text_string_to_metric_families(text)
        if family.name.startswith("corral_agent_memory_")
        for s in family.samples
    }


def test_each_reporting_agent_has_its_two_series_and_a_gone_one_none() -> None:
    m = MasterMetrics()
    assert series(m) == {}
    m.agent_memory.snapshot = [("a1", 100.0, 900.0), ("a2", 0.5, 1.5)]
    assert series(m) == {
        ("corral_agent_memory_used_mib", "a1"): 100.0,
        ("corral_agent_memory_available_mib", "a1"): 900.0,
        ("corral_agent_memory_used_mib", "a2"): 0.5,
        ("corral_agent_memory_available_mib", "a2"): 1.5,
    }
    m.agent_memory.snapshot = [("a2", 1.0, 1.0)]  # a1 gone since
    assert series(m) == {
        ("corral_agent_memory_used_mib", "a2"): 1.0,
        ("corral_agent_memory_available_mib", "a2"): 1.0,
    }
