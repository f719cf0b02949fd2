"""A second master on a busy port fails with one line instead of sharing the port."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integration.corral_cli import corral

pytestmark = pytest.mark.e2e


def test_busy_ports_are_errors(tmp_path: Path) -> None:
    ready = tmp_path / "ready.json"
    first = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "corral.cli.main",
            "master",
            "--grpc",
            "127.0.0.1:0",
            "--http",
            "127.0.0.1:0",
            "--ready-file",
            str(ready),
            # Its own work dir (its registry and lock), not the user's default one.
            "--work-dir",
            str(tmp_path / "master"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while not ready.exists():
            assert first.poll() is None, "the first master exited"
            assert time.monotonic() < deadline, "the first master wrote no ready file"
            time.sleep(0.05)  # another process's file: nothing to await
        taken = json.loads(ready.read_text())
        # Only Corral's one line: not gRPC's own log line before it, nor the master's
        # start-up log (recovered from the registry) as if it had started.
        grpc_busy = corral("master", "--grpc", taken["grpc"], "--http", "127.0.0.1:0")
        assert grpc_busy.returncode == 1
        assert grpc_busy.stderr == (
            f"corral master: cannot start: cannot listen for gRPC on {taken['grpc']}: "
            "the port is taken (another master, or another program, listens on it)\n"
        )
        http_busy = corral("master", "--grpc", "127.0.0.1:0", "--http", taken["http"])
        assert http_busy.returncode == 1
        assert http_busy.stderr == (
            f"corral master: cannot start: cannot listen for HTTP on {taken['http']}: "
            "the port is taken (another master, or another program, listens on it)\n"
        )
    finally:
        first.terminate()
        first.wait(timeout=30)
