"""Admission control's flags (issue #18): on by default, turned off by --no-launch-pacing,
--launch-pacing still accepted (older commands and compose files use it), bounds checked."""

from __future__ import annotations

import argparse

import pytest

from corral.cli import loadtest_cmd, master_cmd
from corral.cli.errors import CliError


def parse(command: str, *argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(exit_on_error=False)
    sub = parser.add_subparsers(dest="command")
    (master_cmd if command == "master" else loadtest_cmd).register(sub)
    return parser.parse_args([command, *argv])


def test_the_master_paces_by_default_and_a_flag_turns_it_off() -> None:
    default = parse("master")
    assert default.launch_pacing is True
    assert (default.max_agent_launches, default.max_waiting_accepts) == (256, 512)
    assert default.max_framework_pending_statuses == 10_000
    assert default.paced_allocation_interval == 0.025
    assert parse("master", "--launch-pacing").launch_pacing is True
    assert parse("master", "--no-launch-pacing").launch_pacing is False


@pytest.mark.parametrize(
    "flag", ["--max-agent-launches", "--max-waiting-accepts", "--max-framework-pending-statuses"]
)
def test_a_bound_must_be_a_positive_whole_number(
    flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        parse("master", flag, "0")
    assert info.value.code == 2
    assert flag in capsys.readouterr().err


def test_the_load_test_starts_a_paced_master_unless_told_otherwise() -> None:
    assert parse("loadtest").launch_pacing is None  # the master's default: on
    assert parse("loadtest", "--no-launch-pacing").launch_pacing is False


def test_pacing_flags_do_not_apply_to_an_existing_master() -> None:
    args = parse("loadtest", "--no-launch-pacing", "--master", "127.0.0.1:5050")
    with pytest.raises(CliError, match="apply to a master the load test starts"):
        loadtest_cmd.run(args)
