"""Commands that start processes stop every one of them on SIGTERM, SIGINT or SIGHUP, not only
on Ctrl-C (corral/stop_signals.py): `corral loadtest` and `corral scenario` here, with real
processes, signalled as `timeout` and `kill` signal them (the command alone, whose children
run in process groups of their own). `corral demo`'s own test is in test_demo.py."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

pytestmark = pytest.mark.e2e

CORRAL = (sys.executable, "-m", "corral.cli.main")


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _wait(check: Callable[[], object], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out after {timeout:g} s waiting for {what}"
        time.sleep(0.2)  # other processes' state: there is no event to wait on


def _started(command: psutil.Process) -> list[psutil.Process]:
    try:
        return command.children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _runs(procs: list[psutil.Process], *words: str) -> bool:
    """Whether one of ``procs`` has each of ``words`` among its arguments."""
    for proc in procs:
        try:
            if set(words) <= set(proc.cmdline()):
                return True
        except psutil.Error:
            continue
    return False


def _stop_and_check(
    argv: list[str],
    tmp_path: Path,
    ready: Callable[[list[psutil.Process]], bool],
    what: str,
    sig: signal.Signals,
) -> str:
    """Start ``argv``; once ``ready(its processes)``, send ``sig`` to it alone; it must exit
    128 + sig saying so, and every process it started must be gone. Returns its output."""
    out_file = tmp_path / "command.out"
    with out_file.open("wb") as out:
        command = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    started: list[psutil.Process] = []
    try:
        me = psutil.Process(command.pid)

        def is_ready() -> bool:
            started[:] = _started(me)
            if command.poll() is not None:
                raise AssertionError(f"exited {command.returncode}:\n{out_file.read_text()}")
            return ready(started)

        _wait(is_ready, 180, what)
        os.kill(command.pid, sig)
        command.wait(timeout=120)
        _wait(lambda: not [p for p in started if _alive(p)], 30, "what the command started to end")
        output = out_file.read_text()
        assert command.returncode == 128 + sig, output
        assert f"stopped ({sig.name})" in output, output
        return output
    finally:
        if command.poll() is None:
            command.kill()
            command.wait()
        for proc in started:  # what a failed run left: not the next test's trouble
            if _alive(proc):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
def test_a_stopped_loadtest_leaves_no_process(tmp_path: Path, sig: signal.Signals) -> None:
    argv = [
        *CORRAL,
        "loadtest",
        *("--agents", "40", "--agent-processes", "2"),
        *("--frameworks", "2", "--framework-processes", "2"),
        *("--duration", "600", "--warmup", "1"),
    ]

    def all_kinds(procs: list[psutil.Process]) -> bool:
        # The master, both agent processes and both framework workers.
        masters = _runs(procs, "master")
        agents = sum(_runs([p], "agent") for p in procs)
        workers = sum(_runs([p], "corral.frameworks.loadtest.worker") for p in procs)
        return masters and agents == 2 and workers == 2

    _stop_and_check(argv, tmp_path, all_kinds, "the master, agents and workers", sig)


def test_a_stopped_scenario_leaves_no_process(tmp_path: Path) -> None:
    argv = [*CORRAL, "scenario", "batch-wave", "--work-dir", str(tmp_path / "work")]

    def cluster_up(procs: list[psutil.Process]) -> bool:
        return _runs(procs, "master") and _runs(procs, "agent")

    _stop_and_check(argv, tmp_path, cluster_up, "the scenario's master and agents", signal.SIGTERM)
