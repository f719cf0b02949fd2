"""Master settings that would make agents flap are refused with a reason."""

from __future__ import annotations

import subprocess
import sys

import pytest

from corral.master.core.config import MasterConfig


def test_timeout_shorter_than_two_heartbeats_is_refused() -> None:
    with pytest.raises(ValueError, match="at least twice the agent heartbeat"):
        MasterConfig(agent_timeout=3, agent_heartbeat_interval=2)
    assert MasterConfig(agent_timeout=4, agent_heartbeat_interval=2).agent_timeout == 4


@pytest.mark.parametrize("value", [0.0, -1.0, float("nan"), float("inf")])
def test_non_positive_settings_are_refused(value: float) -> None:
    with pytest.raises(ValueError, match="allocation_interval"):
        MasterConfig(allocation_interval=value)


def test_cli_refuses_flapping_settings_with_exit_2() -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "corral.cli.main",
            "master",
            "--agent-timeout",
            "3",
            "--agent-heartbeat",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert "at least twice" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("flags", "reason"),
    [
        (("--min-allocatable-resources", "cpus:1;bogus:2|mem:3"), "unknown resource 'bogus'"),
        (("--fair-sharing-excluded-resources", "gpus,foo"), "unknown resource 'foo'"),
    ],
)
def test_cli_refuses_bad_allocator_flags_with_exit_2(flags: tuple[str, str], reason: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "corral.cli.main", "master", *flags],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    assert reason in result.stderr and len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "field", ["offer_timeout", "max_completed_frameworks", "max_completed_tasks_per_framework"]
)
def test_bounds_may_be_zero_but_not_negative(field: str) -> None:
    assert getattr(MasterConfig(**{field: 0}), field) == 0  # off / keep none
    with pytest.raises(ValueError, match=field):
        MasterConfig(**{field: -1})


@pytest.mark.parametrize(
    ("flags", "reason"),
    [
        (("--offer-timeout", "-1"), "--offer-timeout"),
        (("--offer-timeout", "soon"), "--offer-timeout"),
        (("--max-completed-frameworks", "-1"), "--max-completed-frameworks"),
        (("--max-completed-tasks-per-framework", "1.5"), "--max-completed-tasks-per-framework"),
    ],
)
def test_cli_refuses_bad_bounds_with_exit_2(flags: tuple[str, str], reason: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "corral.cli.main", "master", *flags],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert reason in result.stderr and "Traceback" not in result.stderr


def test_master_help_documents_the_bounds() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "corral.cli.main", "master", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    for flag in ("--offer-timeout", "--max-completed-frameworks", "--max-completed-tasks"):
        assert flag in result.stdout


def test_a_longest_failover_timeout_below_the_default_one_is_refused() -> None:
    with pytest.raises(ValueError, match="shorter than the default one"):
        MasterConfig(framework_failover_timeout=120, max_failover_timeout=60)
    assert MasterConfig(max_failover_timeout=604_800).max_failover_timeout == 604_800


def test_cli_refuses_a_longest_failover_timeout_below_the_default_with_exit_2() -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "corral.cli.main",
            "master",
            *("--failover-timeout", "120", "--max-failover-timeout", "60"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert "shorter than the default one" in result.stderr
    assert "Traceback" not in result.stderr
