"""`corral loadtest` end to end: a small run of real processes gives sane figures, never speed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

CORRAL = (sys.executable, "-m", "corral.cli.main")
KEYS = {
    "launches_per_s",
    "offers_per_s",
    "accepts_per_s",
    "completions_per_s",
    "accept_to_running_ms",
    "offer_latency_ms",
    "allocation_cycle_ms",
    "master_cpu_percent",
    "machine_cpu_busy_percent",
    "cpu_steal_percent",
    "master_rss_mb",
    "tasks_lost",
    "errors",
    "parameters",
    "cost",
}


def _loadtest(tmp_path: Path, *args: str) -> dict[str, object]:
    out = tmp_path / "figures.json"
    plot = tmp_path / "figures.png"
    proc = subprocess.run(
        [*CORRAL, "loadtest", *args, "--json", str(out), "--plot", str(plot)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, f"loadtest failed:\n{proc.stdout}\n{proc.stderr}"
    assert plot.stat().st_size > 0 and plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    figures: dict[str, object] = json.loads(out.read_text())
    assert figures.keys() >= KEYS, f"missing keys: {KEYS - figures.keys()}"
    return figures


def _p50_p99(figures: dict[str, object], key: str) -> tuple[float, float]:
    value = figures[key]
    assert isinstance(value, dict)
    p50, p99 = value["p50"], value["p99"]
    assert isinstance(p50, float) and isinstance(p99, float), f"{key}: {value}"
    return p50, p99


def test_launch_mode_small_cluster(tmp_path: Path) -> None:
    f = _loadtest(
        tmp_path, "--agents", "200", "--frameworks", "5", "--duration", "8", "--warmup", "2"
    )
    assert f["tasks_lost"] == 0, f"lost: {f['lost_states']}, never ended: {f['tasks_unterminated']}"
    assert f["errors"] == [], f["errors"]
    assert isinstance(f["launches_per_s"], float) and f["launches_per_s"] > 0
    assert isinstance(f["offers_per_s"], float) and f["offers_per_s"] > 0
    assert isinstance(f["completions_per_s"], float) and f["completions_per_s"] > 0
    for key in ("accept_to_running_ms", "allocation_cycle_ms", "offer_latency_ms"):
        p50, p99 = _p50_p99(f, key)
        assert 0 <= p50 <= p99, f"{key}: p50 {p50} > p99 {p99}"
    assert isinstance(f["master_rss_mb"], float) and f["master_rss_mb"] > 0
    busy, steal = f["machine_cpu_busy_percent"], f["cpu_steal_percent"]
    assert isinstance(busy, float) and isinstance(steal, float), (busy, steal)
    # Busy and stolen time are shares of one total, each rounded to 0.1: together at most
    # 100 plus the two roundings (99.9 + 0.1 compared as 0.1 <= 100 - 99.9 failed on floats).
    assert 0 < busy <= 100 and steal >= 0 and busy + steal <= 100.1 + 1e-9, (busy, steal)
    groups = f["process_cpu_percent"]
    assert isinstance(groups, dict) and set(groups) == {"agents", "frameworks"}, groups
    assert all(0 < v <= 100 * 64 for v in groups.values()), groups
    params = f["parameters"]
    assert isinstance(params, dict)
    assert (params["agents"], params["frameworks"], params["mode"]) == (200, 5, "launch")
    assert params["launch_pacing"] is True  # admission control is the default (issue #18)
    # A healthy cluster this size stays inside every admission bound: nothing refused.
    master = f["master"]
    assert isinstance(master, dict)
    assert master["accepts_refused"] == {
        "waiting_accepts": 0,
        "agent_launches": 0,
        "framework_statuses": 0,
    }, master
    # What a launch cost: every process's CPU, and the master's messages, per task.
    cost = f["cost"]
    assert isinstance(cost, dict) and cost["unit"] == "launch", cost
    for key in ("master_cpu_us", "agents_cpu_us", "frameworks_cpu_us"):
        assert isinstance(cost[key], float) and cost[key] > 0, cost
    # A launch takes at least an accept and its RUNNING status in, and a launch out, for
    # each offer of up to 24 tasks; well under one message of each per task.
    assert 0 < cost["master_messages_in"] < 5 and 0 < cost["master_messages_out"] < 5, cost
    # The registration phase: every agent, its time, and which side spent the CPU.
    reg = f["registration"]
    assert isinstance(reg, dict), reg
    assert reg["agents"] == 200 and reg["unreachable"] == 0, reg
    assert isinstance(reg["seconds"], float) and reg["seconds"] > 0, reg
    for key in ("master_cpu_percent", "agents_cpu_percent"):
        assert isinstance(reg[key], float) and reg[key] > 0, reg
    assert reg["limit"] in ("master", "load generator"), reg
    assert f["tasks_revived"] == 0


def _nothing_that_ran_lost(f: dict[str, object]) -> None:
    """Only launches that never reached their agent end DROPPED; no task that ran was lost,
    none is left unended, none ran on after being reported gone."""
    lost = f["lost_states"]
    assert isinstance(lost, dict) and set(lost) <= {"DROPPED"}, lost
    assert f["tasks_unterminated"] == 0
    assert f["tasks_revived"] == 0


def test_loss_wave_agents_come_back_and_no_task_is_lost_or_runs_on(tmp_path: Path) -> None:
    # 60 of 200 agents (in 2 processes) cut off for 2 s a quarter into the window: they
    # re-register with their tasks, which go on; none reported lost, none running after that.
    f = _loadtest(
        tmp_path,
        *("--agents", "200", "--frameworks", "5", "--duration", "8", "--warmup", "2"),
        *("--agent-processes", "2", "--loss-wave", "60", "--loss-wave-away", "2"),
    )
    wave = f["loss_wave"]
    assert isinstance(wave, dict), f.keys()
    assert wave["agents"] == 60, wave
    fewest = wave["fewest_connected"]
    assert isinstance(fewest, int) and 140 <= fewest < 200, wave  # they went, no more than 60
    back = wave["back_after_seconds"]
    assert isinstance(back, float) and back >= 2.0, wave  # not before they were let back
    assert wave["unreachable"] == 0, wave
    # Launches written to a stream as it was cut never reached their agent, which re-registers
    # without them: DROPPED (reconcile.py rule 1), nothing ran, the framework may launch again.
    # No task that ran was lost, nor ran on after being reported gone.
    _nothing_that_ran_lost(f)
    # An agent cut off has its offers rescinded; an Accept already on its way for one of them
    # is refused naming the offer (the framework gets the RESCIND and goes on), as is a call
    # on a stream reset with it. Any other refusal is a defect.
    errors = f["errors"]
    assert isinstance(errors, list), errors
    assert all(
        "is unknown, rescinded or already used" in e or ": UNAVAILABLE: " in e for e in errors
    ), errors
    assert isinstance(f["launches_per_s"], float) and f["launches_per_s"] > 0


def test_one_sqlite_master_killed_is_restarted_on_its_registry_and_offers_again(
    tmp_path: Path,
) -> None:
    # kill -9 of the only master, started again on its SQLite registry and its ports: the
    # agents and frameworks dial it again, it recovers them and offers; nothing that ran is lost.
    f = _loadtest(
        tmp_path,
        # The window outlasts the frameworks' reconnection backoff (up to 10 s), so they are
        # subscribed again when they drain.
        *("--agents", "50", "--frameworks", "3", "--duration", "20", "--warmup", "1"),
        *("--registry", "sqlite", "--kill-leader-at", "3"),
    )
    failover = f["failover"]
    assert isinstance(failover, dict), f.keys()
    assert failover["killed"] == "master" and failover["new_leader"] == "master-restarted"
    seconds = failover["failover_seconds"]
    assert isinstance(seconds, float) and seconds > 0, failover
    # The drain starts once every agent is back with the restarted master (a task on an agent
    # still on its way back is late, not lost), and says when that was.
    back = failover["agents_back_seconds"]
    assert isinstance(back, float) and back > 0, failover
    _nothing_that_ran_lost(f)
    # Calls in flight when the master was killed, or made before the driver had subscribed to
    # the restarted one, are refused UNAVAILABLE (the frameworks retry with new offers); any
    # other refusal is a defect.
    errors = f["errors"]
    assert isinstance(errors, list), errors
    assert all(": UNAVAILABLE: " in e for e in errors), errors


def test_decline_mode_offers_and_launches_nothing(tmp_path: Path) -> None:
    f = _loadtest(
        tmp_path,
        *("--agents", "100", "--frameworks", "3", "--duration", "4", "--warmup", "1"),
        *("--mode", "decline", "--allocation-interval", "0.2"),
    )
    assert isinstance(f["offers_per_s"], float) and f["offers_per_s"] > 0
    assert f["launches_per_s"] == 0
    assert f["tasks_lost"] == 0
    assert f["errors"] == [], f["errors"]
    cost = f["cost"]
    assert isinstance(cost, dict) and cost["unit"] == "offer", cost
    # Offers travel in batches: a decline call and an OFFERS event carry many offers each.
    assert 0 < cost["master_messages_in"] < 1 and 0 < cost["master_messages_out"] < 1, cost


def test_bad_option_is_a_usage_error() -> None:
    proc = subprocess.run(
        [*CORRAL, "loadtest", "--agents", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "--agents" in proc.stderr and "Traceback" not in proc.stderr
