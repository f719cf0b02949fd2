"""Smoke test of the allocator benchmark: a tiny shape, structure and agreement, never speed."""

from __future__ import annotations

import gc
import json
import time
from pathlib import Path

import pytest

from corral.cli.main import main
from corral.master.allocator import bench
from corral.master.allocator.numpy_allocator import KERNELS, Kernel


@pytest.mark.parametrize("kernel", KERNELS)
def test_run_shape_numpy_and_reference_agree(kernel: Kernel) -> None:
    result = bench.run_shape(
        agents=30,
        frameworks=4,
        cycles=3,
        seed=7,
        reference_max_agents=100,
        reference_cycles=3,
        clock=time.perf_counter,
        kernel=kernel,
    )
    assert result.agree is True
    assert result.reference_cycles == 3
    assert result.offers_per_offer_cycle == 30  # every agent offered while filters pile up
    assert result.median_ms >= 0 and result.p99_ms >= result.median_ms
    assert result.state_bytes > 0


@pytest.mark.parametrize("kernel", KERNELS)
def test_roles_and_quota_shape_agrees_with_the_reference(kernel: Kernel) -> None:
    result = bench.run_shape(
        agents=24,
        frameworks=6,
        cycles=2,
        seed=3,
        reference_max_agents=100,
        reference_cycles=2,
        clock=time.perf_counter,
        kernel=kernel,
        roles=3,
        quota=True,
    )
    assert (result.roles, result.quota) == (3, True)
    assert result.agree is True
    assert result.offers_per_offer_cycle > 0


def test_reference_skipped_above_the_limit() -> None:
    result = bench.run_shape(20, 2, 2, 1, 10, 2, time.perf_counter)
    assert result.reference_median_ms is None
    assert result.reference_skipped is not None


def test_cli_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    before = gc.get_threshold()
    code = main(
        [
            "bench", "allocator", "--agents", "20", "--frameworks", "1,3", "--cycles", "2",
            "--roles", "1,2", "--quota", "--memory-shape", "20x3", "--json", str(out),
        ]
    )  # fmt: skip
    assert code == 0
    assert gc.get_threshold() == before  # the master's GC settings only while it ran
    doc = json.loads(out.read_text())
    shapes = [(r["agents"], r["frameworks"], r["roles"], r["quota"]) for r in doc["results"]]
    assert shapes == [(20, 1, 1, True), (20, 1, 2, True), (20, 3, 1, True), (20, 3, 2, True)]
    for r in doc["results"]:
        assert {"median_ms", "p99_ms", "paced_median_ms", "reference_median_ms", "agree"} <= set(r)
        assert r["agree"] is True
    assert doc["memory"]["bytes"] > 0


def test_cli_rejects_bad_sizes() -> None:
    try:
        main(["bench", "allocator", "--agents", "ten"])
    except SystemExit as exc:
        assert exc.code == 2
    else:
        raise AssertionError("a bad --agents must be a usage error")


def test_paced_cycles_stop_at_their_budget_and_give_their_plans_back() -> None:
    alloc = bench.DrfAllocator()
    times, plans = bench.run_paced(alloc, 30, 4, 2, seed=5, clock=time.perf_counter, budget=20.0)
    assert len(times) == len(plans) == 2
    for plan in plans:
        cpus = [scalars[0] for _, _, scalars in plan]
        assert sum(cpus) >= 20.0 > sum(cpus[:-1])  # the cycle stopped at the agent reaching it
    # Given back unfiltered: a whole cycle then offers every agent's remainder.
    assert len(alloc.cycle(1.0, 9)) == 30


def test_cli_refuses_a_budget_that_is_not_positive(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["bench", "allocator", "--agents", "20", "--budget", "0"])
    assert exit_.value.code == 2
    assert "--budget" in capsys.readouterr().err


def test_the_reference_agrees_when_it_runs_fewer_cycles_than_the_numpy_allocator() -> None:
    # The CLI's defaults: --cycles 5, --reference-cycles 2. Each phase's first cycles must be
    # the same cycles (same seeds, same state) however many the numpy allocator runs.
    result = bench.run_shape(60, 5, 3, 1, 100, 2, time.perf_counter, budget=20.0)
    assert result.reference_cycles == 2
    assert result.agree is True
