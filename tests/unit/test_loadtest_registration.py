"""The registration phase's figures (corral/loadtest/registration.py): which side was the limit."""

from __future__ import annotations

from corral.loadtest.collect import MachineTimes
from corral.loadtest.registration import CpuMark, limit, registration_figures


def test_figures_give_rate_cpu_shares_and_the_limit() -> None:
    start = CpuMark(100.0, master=10.0, agents=0.0, machine=MachineTimes(1000.0, 500.0, 0.0))
    end = CpuMark(150.0, master=40.0, agents=45.0, machine=MachineTimes(1100.0, 510.0, 10.0))
    f = registration_figures(start, end, agents=50_000, unreachable=3)
    assert f["seconds"] == 50.0 and f["agents_per_s"] == 1000.0
    assert f["master_cpu_percent"] == 60.0 and f["agents_cpu_percent"] == 90.0
    assert f["machine_cpu_busy_percent"] == 80.0  # (100 - 10 idle - 10 stolen) of 100
    assert f["unreachable"] == 3
    assert f["limit"] == "load generator"


def test_a_master_near_a_whole_core_is_the_limit_whatever_the_agents_spend() -> None:
    assert limit(master=90.0, generator=150.0) == "master"
    assert limit(master=50.0, generator=40.0) == "master"
    assert limit(master=50.0, generator=60.0) == "load generator"
    assert limit(master=None, generator=60.0) == "unknown"


def test_without_the_masters_pid_the_limit_is_unknown() -> None:
    start = CpuMark(0.0, master=None, agents=0.0, machine=None)
    end = CpuMark(10.0, master=None, agents=5.0, machine=None)
    f = registration_figures(start, end, agents=10, unreachable=0)
    assert f["master_cpu_percent"] is None and f["machine_cpu_busy_percent"] is None
    assert f["agents_cpu_percent"] == 50.0 and f["limit"] == "unknown"
