"""`corral demo --duration N` runs a real local cluster with the three frameworks, exits 0,
reports what each did, and leaves no process behind."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

pytestmark = pytest.mark.e2e


def test_demo_runs_and_summarises(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "corral.cli.main",
            "demo",
            "--duration",
            "30",
            "--grpc",
            "127.0.0.1:0",
            "--http",
            "127.0.0.1:0",
            "--work-dir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    summary = re.search(r"Summary: 4 agents, \d+ framework runs, (\d+) tasks: (.*)", out)
    assert summary, out
    assert "FINISHED" in summary.group(2) and "FAILED" not in summary.group(2), out
    # Serving doubled halfway (3 -> 6) and got all six, preempting batch if it had to.
    assert "serving: 6 of 6 instances running at most" in out, out
    waves = re.search(r"batch: (\d+) waves ended, (\d+) succeeded", out)
    assert waves and int(waves.group(1)) >= 1 and waves.group(1) == waves.group(2), out
    trainings = re.search(r"gang: (\d+) trainings ended, (\d+) completed, last final loss", out)
    assert trainings and int(trainings.group(1)) >= 1, out
    assert trainings.group(1) == trainings.group(2), out
    assert re.search(r"^\s+\d+ s  cpus [\d.]+/16  live tasks: ", out, re.MULTILINE), out
    leftover = [
        p.info["cmdline"]
        for p in psutil.process_iter(["cmdline"])
        if str(tmp_path) in " ".join(p.info["cmdline"] or [])
    ]
    assert leftover == [], f"demo left processes running: {leftover}"
