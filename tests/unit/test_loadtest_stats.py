"""The load test's arithmetic: the workers' latency histogram and Prometheus bucket quantiles."""

from __future__ import annotations

import math
from typing import Any

import pytest
from rich.console import Console

from corral.frameworks.loadtest.histogram import Histogram
from corral.loadtest.collect import (
    MachineTimes,
    MasterSample,
    group_cpu,
    machine_share,
    unit_cost,
)
from corral.loadtest.options import LoadTestOptions, OptionError, split
from corral.loadtest.report import print_final
from corral.loadtest.run import machine_times
from corral.loadtest.scrape import beyond_last_bound, bucket_delta, parse, quantile


def test_histogram_quantiles_are_within_a_bucket_of_the_samples() -> None:
    h = Histogram()
    for ms in range(1, 1001):  # 1 ms .. 1 s, uniform
        h.add(ms / 1000)
    p50, p99 = h.quantile(0.5), h.quantile(0.99)
    assert p50 is not None and p99 is not None
    assert p50 == pytest.approx(0.5, rel=0.05)
    assert p99 == pytest.approx(0.99, rel=0.05)
    assert Histogram().quantile(0.5) is None


def test_histogram_survives_json_and_merges_by_addition() -> None:
    a, b = Histogram(), Histogram()
    a.add(0.001)
    b.add(0.001)
    b.add(2.0)
    merged = Histogram.merged([Histogram.from_json(a.to_json()), b])
    assert merged.total == 3
    assert merged.quantile(1.0) == pytest.approx(2.0, rel=0.05)


METRICS = """\
# TYPE corral_allocation_cycle_seconds histogram
corral_allocation_cycle_seconds_bucket{le="0.001"} %d
corral_allocation_cycle_seconds_bucket{le="0.01"} %d
corral_allocation_cycle_seconds_bucket{le="+Inf"} %d
corral_allocation_cycle_seconds_count %d
corral_allocation_cycle_seconds_sum 1.0
# TYPE corral_agents gauge
corral_agents{state="active"} 7.0
"""


def test_bucket_quantile_between_two_scrapes() -> None:
    before = parse(METRICS % (10, 10, 10, 10), 0.0)
    after = parse(METRICS % (10, 110, 110, 110), 1.0)  # 100 new cycles, all in (1 ms, 10 ms]
    buckets = bucket_delta(before, after, "corral_allocation_cycle_seconds")
    p50 = quantile(buckets, 0.5)
    assert p50 is not None and 0.001 < p50 <= 0.01
    assert after.value("corral_agents", state="active") == 7
    empty = bucket_delta(after, after, "corral_allocation_cycle_seconds")
    assert quantile(empty, 0.5) is None


def test_quantile_beyond_the_last_bound_reports_the_bound() -> None:
    buckets = [(0.1, 0.0), (1.0, 50.0), (math.inf, 100.0)]
    assert quantile(buckets, 0.99) == 1.0
    assert beyond_last_bound(buckets, 0.99)
    assert not beyond_last_bound(buckets, 0.5)  # inside (0.1, 1.0]
    assert not beyond_last_bound([(1.0, 0.0), (math.inf, 0.0)], 0.99)  # nothing observed


def test_the_report_says_a_quantile_past_the_last_bound_exceeds_it() -> None:
    figures = _figures(50.0)
    figures["offer_latency_ms"] = {"p50": 250.0, "p99": 10_000.0, "p99_beyond": True}
    console = Console(record=True, width=200)
    print_final(console, figures)
    assert "250 / > 10,000" in console.export_text()


def test_options_are_validated_and_split_evenly() -> None:
    with pytest.raises(OptionError, match="--agents"):
        LoadTestOptions(agents=0)
    with pytest.raises(OptionError, match="--mode"):
        LoadTestOptions(mode="sideways")
    assert LoadTestOptions(agents=10_000).agent_process_count == 4
    assert LoadTestOptions(agents=1_000).agent_process_count == 1
    # Capped: 20 processes of 2,500 took more CPU than the master at 50,000 agents.
    assert LoadTestOptions(agents=50_000).agent_process_count == 4
    assert LoadTestOptions(agents=50_000, agent_processes=8).agent_process_count == 8
    with pytest.raises(OptionError, match="--loss-wave must be between 1 and --agents"):
        LoadTestOptions(agents=10, loss_wave=11)
    with pytest.raises(OptionError, match="--loss-wave-away"):
        LoadTestOptions(loss_wave=1, loss_wave_away=0.0)
    with pytest.raises(OptionError, match="the master the load test starts"):
        LoadTestOptions(loss_wave=1, master="127.0.0.1:5050")
    # One master killed is restarted on its registry: only a durable one (SQLite) has one.
    with pytest.raises(OptionError, match="--kill-leader-at needs --masters 2 or more"):
        LoadTestOptions(kill_leader_at=5.0)
    assert LoadTestOptions(registry="sqlite", kill_leader_at=5.0).kill_leader_at == 5.0
    # The load test's ZooKeeper grants 1 to 10 s (tickTime 500 ms).
    with pytest.raises(OptionError, match="--zk-session-timeout must be 1 to 10 s"):
        LoadTestOptions(masters=2, registry="zookeeper", zk_session_timeout=30.0)
    assert LoadTestOptions(warmup=5, duration=40, loss_wave=1).loss_wave_at == 15.0
    assert split(10, 3) == [4, 3, 3] and sum(split(10_000, 4)) == 10_000


def test_machine_share_is_taken_between_the_first_and_last_sample_of_the_window() -> None:
    def at(t: float, total: float, idle: float, steal: float) -> MasterSample:
        return MasterSample(t, None, None, MachineTimes(total=total, idle=idle, steal=steal))

    window = [
        at(1.0, 1000.0, 400.0, 10.0),
        MasterSample(2.0, None, None, None),  # psutil failed once: skipped
        at(3.0, 1200.0, 450.0, 40.0),  # 200 s of CPU: 50 idle, 30 stolen, 120 busy
    ]
    assert machine_share(window) == {"machine_cpu_busy_percent": 60.0, "cpu_steal_percent": 15.0}
    assert machine_share(window[:1]) == {
        "machine_cpu_busy_percent": None,
        "cpu_steal_percent": None,
    }


def test_machine_times_reads_this_machine() -> None:
    t = machine_times()
    assert t is not None and t.total > 0 and 0 <= t.idle <= t.total and 0 <= t.steal <= t.total


def test_group_cpu_is_per_kind_between_its_first_and_last_sample() -> None:
    window = [
        MasterSample(10.0, None, None, None, {"agents": 5.0, "frameworks": 1.0}),
        MasterSample(11.0, None, None, None, {"agents": 5.6}),  # a worker had ended
        MasterSample(12.0, None, None, None, {"agents": 6.4, "frameworks": 1.5}),
    ]
    assert group_cpu(window) == {"agents": 70.0, "frameworks": 25.0}
    assert group_cpu(window[:1]) == {}


def test_unit_cost_divides_each_processs_cpu_and_the_masters_messages_by_the_rate() -> None:
    master = {"messages_received_per_s": 500.0, "messages_sent_per_s": 750.0}
    cost = unit_cost("launch", 2500.0, 75.0, {"agents": 50.0, "frameworks": 25.0}, master)
    assert cost == {
        "unit": "launch",
        "master_cpu_us": 300.0,  # 0.75 of a core over 2,500 launches a second
        "agents_cpu_us": 200.0,
        "frameworks_cpu_us": 100.0,
        "master_messages_in": 0.2,
        "master_messages_out": 0.3,
    }


def test_unit_cost_without_a_rate_or_a_measure_is_unknown_not_zero() -> None:
    cost = unit_cost("offer", 0.0, 75.0, {}, {})
    assert cost["unit"] == "offer"
    assert [cost[k] for k in cost if k != "unit"] == [None] * 5


def _figures(busy: float) -> dict[str, Any]:
    return {
        "parameters": {"mode": "launch", "agents": 10, "frameworks": 2, "warmup": 1.0},
        "window_seconds": 5.0,
        "offers_per_s": 1.0,
        "accepts_per_s": 1.0,
        "declines_per_s": 0.0,
        "launches_per_s": 24.0,
        "completions_per_s": 24.0,
        "accept_to_running_ms": {"p50": 1.0, "p99": 2.0},
        "offer_latency_ms": {"p50": 1.0, "p99": 2.0},
        "allocation_cycle_ms": {"p50": 1.0, "p99": 2.0},
        "master_cpu_percent": 5.0,
        "process_cpu_percent": {"agents": 2.0, "frameworks": 1.0},
        "machine_cpu_busy_percent": busy,
        "cpu_steal_percent": 0.0,
        "cost": unit_cost("launch", 24.0, 5.0, {"agents": 2.0}, {"messages_sent_per_s": 9.0}),
        "master_rss_mb": 100.0,
        "tasks_lost": 0,
        "lost_states": {},
        "tasks_unterminated": 0,
        "call_errors": 0,
        "errors": [],
        "master": {},
    }


@pytest.mark.parametrize(("busy", "noted"), [(95.0, True), (60.0, False)])
def test_the_report_says_when_the_machine_bounded_the_run(busy: float, noted: bool) -> None:
    console = Console(record=True, width=200)
    print_final(console, _figures(busy))
    text = console.export_text()
    assert "CPU µs per launch: master / agents / frameworks" in text
    assert "2,083 / 833 / —" in text  # 5 % and 2 % of a core over 24 launches a second
    assert "— / 0.375" in text  # none counted in, 9 messages sent a second over 24 launches
    assert ("bounded by this machine" in text) is noted
