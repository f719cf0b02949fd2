"""Smoke test of ``corral bench demands``: waiting gangs are never cut, fitting gangs are cut
every tick (structure, never speed)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from corral.cli.main import main
from corral.master.bench import demands as demand_bench


def test_waiting_gangs_hold_nothing_and_fitting_gangs_are_cut_each_tick() -> None:
    result = demand_bench.run(
        agents=40, demands=20, gangs=4, ticks=2, clock=time.perf_counter, allocator="numpy"
    )
    assert result.bundles_per_cutting_tick == 4  # declined with refuse 0: cut again
    assert set(result.median_ms) == set(demand_bench.PHASES)


def test_cli_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "demands.json"
    code = main(
        ["bench", "demands", "--agents", "30", "--demands", "10", "--gangs", "2",
         "--ticks", "1", "--allocator", "numpy", "--json", str(out)]
    )  # fmt: skip
    assert code == 0
    doc = json.loads(out.read_text())
    assert doc["agents"] == 30 and doc["gangs"] == 2 and doc["bundles_per_cutting_tick"] == 2
