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
        grpc_busy = corral("master", "--grpc", taken["grpc"], "--http", "127.0.0.1:0")
        assert grpc_busy.returncode == 1
        assert f"cannot listen for gRPC on {taken['grpc']}" in grpc_busy.stderr
        assert "Traceback" not in grpc_busy.stderr
        http_busy = corral("master", "--grpc", "127.0.0.1:0", "--http", taken["http"])
        assert http_busy.returncode == 1
        assert f"cannot listen for HTTP on {taken['http']}" in http_busy.stderr
        assert "Traceback" not in http_busy.stderr
    finally:
        first.terminate()
        first.wait(timeout=30)
