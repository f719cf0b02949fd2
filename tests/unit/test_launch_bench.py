"""Smoke test of ``corral bench launches``: each round launches every agent full, reports
RUNNING and FINISHED, and acknowledges them all (the bench checks each count and
raises otherwise); the figures are per-task costs (structure, never speed)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from corral.cli.main import main
from corral.master.bench import launches as launch_bench


def test_every_agent_is_launched_full_each_round() -> None:
    result = launch_bench.run(agents=12, frameworks=3, rounds=3, clock=time.perf_counter)
    assert result.rounds == 3
    # cpus:24;mem:4096 agents, 1-cpu 128 MiB tasks: 24 each, all ended before the next round.
    assert result.per_round == 12 * 24
    assert set(result.us_per_unit) == set(launch_bench.STEPS)
    assert all(v > 0 for v in result.us_per_unit.values())


def test_cli_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "launches.json"
    code = main(
        ["bench", "launches", "--agents", "5", "--frameworks", "2", "--rounds", "2",
         "--allocator", "numpy", "--json", str(out)]
    )  # fmt: skip
    assert code == 0
    doc = json.loads(out.read_text())
    assert doc["agents"] == 5 and doc["tasks_per_round"] == 5 * 24
    assert set(doc["us_per_task"]) == set(launch_bench.STEPS)
