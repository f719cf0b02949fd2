"""`corral demo --duration N` runs a real local cluster, exits 0 and reports the tasks it ran."""

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
            "12",
            "--grpc",
            "127.0.0.1:0",
            "--http",
            "127.0.0.1:0",
            "--work-dir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    summary = re.search(r"Summary: 3 agents, \d+ framework runs, (\d+) tasks: (.*)", result.stdout)
    assert summary, result.stdout
    assert int(summary.group(1)) >= 6
    assert "FINISHED" in summary.group(2) and "FAILED" not in summary.group(2)
    leftover = [
        p.info["cmdline"]
        for p in psutil.process_iter(["cmdline"])
        if str(tmp_path) in " ".join(p.info["cmdline"] or [])
    ]
    assert leftover == [], f"demo left processes running: {leftover}"
