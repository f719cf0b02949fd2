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
