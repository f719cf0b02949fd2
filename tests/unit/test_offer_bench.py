"""Smoke test of ``corral bench offers``: every offer made is declined and re-offered, and the
figures are per-offer costs (structure, never speed)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from corral.cli.main import main
from corral.master.bench import offers as offer_bench


def test_every_agent_is_offered_each_round() -> None:
    result = offer_bench.run(agents=40, frameworks=3, rounds=3, clock=time.perf_counter)
    assert result.rounds == 3
    # Declined with refuse_seconds 0: every agent comes back in the next tick.
    assert result.per_round == 40
    assert set(result.us_per_unit) == set(offer_bench.STEPS)
    assert all(v > 0 for v in result.us_per_unit.values())


def test_cli_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "offers.json"
    code = main(
        ["bench", "offers", "--agents", "30", "--frameworks", "2", "--rounds", "2",
         "--allocator", "numpy", "--json", str(out)]
    )  # fmt: skip
    assert code == 0
    doc = json.loads(out.read_text())
    assert doc["agents"] == 30 and doc["offers_per_round"] == 30
    assert set(doc["us_per_offer"]) == {"tick", "encode", "wire", "decline"}
