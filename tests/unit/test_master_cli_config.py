"""`corral master`'s flags map onto MasterConfig: with no flags the master runs the core's own
defaults (a default restated in the CLI once kept a changed one from taking), and each knob's
flag reaches its field."""

from __future__ import annotations

import dataclasses

import pytest

from corral.cli.main import build_parser
from corral.cli.master_cmd import config_from_args
from corral.loadtest.options import LoadTestOptions
from corral.master.core.config import MasterConfig, default


def _config(*flags: str) -> MasterConfig:
    return config_from_args(build_parser().parse_args(["master", *flags]), {}, {}, ())


def test_no_flags_give_the_cores_defaults() -> None:
    assert _config() == MasterConfig()


@pytest.mark.parametrize(
    ("flag", "value", "field"),
    [
        ("--allocation-interval", "0.25", "allocation_interval"),
        ("--agent-timeout", "30", "agent_timeout"),
        ("--max-agent-heartbeats", "100", "max_agent_heartbeats_per_second"),
        ("--agent-reregister-timeout", "120", "agent_reregister_timeout"),
        ("--failover-timeout", "7", "framework_failover_timeout"),
        ("--max-failover-timeout", "604800", "max_failover_timeout"),
        ("--registry-max-agent-age", "3600", "registry_max_agent_age"),
        ("--registry-max-agent-count", "0", "registry_max_agent_count"),
        ("--offer-timeout", "0", "offer_timeout"),
        ("--max-completed-frameworks", "3", "max_completed_frameworks"),
        ("--max-completed-tasks-per-framework", "9", "max_completed_tasks_per_framework"),
        ("--launch-latency-target", "0.2", "launch_latency_target"),
        ("--paced-allocation-interval", "0.03", "paced_allocation_interval"),
        ("--max-agent-launches", "8", "max_agent_launches"),
        ("--max-framework-pending-statuses", "40", "max_framework_pending_statuses"),
        ("--max-waiting-accepts", "16", "max_waiting_accepts"),
        ("--preemption-nomination", "2", "preemption_nomination_seconds"),
        ("--agent-ack-hold", "0.5", "agent_ack_hold"),
    ],
)
def test_a_flag_sets_its_field_and_nothing_else(flag: str, value: str, field: str) -> None:
    config = _config(flag, value)
    assert getattr(config, field) == type(default(field))(value)
    assert getattr(config, field) != default(field)
    others = {f.name for f in dataclasses.fields(MasterConfig)} - {field}
    if field == "agent_timeout":  # the heartbeat follows it: a third, at most the default
        others.discard("agent_heartbeat_interval")
    assert {n: getattr(config, n) for n in others} == {
        n: getattr(MasterConfig(), n) for n in others
    }


def test_switches_and_sizes() -> None:
    assert _config("--no-launch-pacing").launch_pacing is False
    assert _config("--no-preemption").preemption is False
    assert _config("--stream-queue-mib", "16").stream_queue_bytes == 16 * 1024 * 1024
    assert _config("--agent-heartbeat", "2").agent_heartbeat_interval == 2.0
    assert _config("--agent-removal-rate", "4").agent_removal_rate == 4.0


def test_an_agent_ack_hold_is_zero_or_more_and_shorter_than_an_agents_resend() -> None:
    assert _config("--agent-ack-hold", "0").agent_ack_hold == 0.0
    with pytest.raises(ValueError, match=r"agent_ack_hold \(6s\) must be at most 5s"):
        MasterConfig(agent_ack_hold=6.0)
    with pytest.raises(ValueError, match="agent_ack_hold must be a positive number"):
        MasterConfig(agent_ack_hold=-1.0)


def test_default_of_a_field_without_one_is_an_error() -> None:
    with pytest.raises(KeyError):
        default("no_such_knob")


def test_the_load_tests_master_settings_default_to_the_masters() -> None:
    opts = LoadTestOptions()
    assert opts.allocation_interval == default("allocation_interval")
    assert opts.launch_pacing == default("launch_pacing")
    assert opts.launch_latency_target == default("launch_latency_target")
