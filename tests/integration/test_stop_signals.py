"""Commands that start processes stop every one of them on SIGTERM, SIGINT or SIGHUP, not only
on Ctrl-C (corral/stop_signals.py): `corral loadtest` and `corral scenario` here, with real
processes, signalled as `timeout` and `kill` signal them (the command alone, whose children
run in process groups of their own). `corral demo`'s own test is in test_demo.py."""

from __future__ import annotations

import contextlib
import os
import re
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


def _survivors(procs: list[psutil.Process]) -> list[str]:
    """The command lines of those of ``procs`` still running (for the failure message)."""
    out = []
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            if _alive(proc):
                out.append(" ".join(proc.cmdline()))
    return out


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


def _naming(text: str) -> list[psutil.Process]:
    """The processes whose command line names ``text`` (the command's work dir)."""
    out = []
    for proc in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            if text in " ".join(proc.cmdline()):
                out.append(proc)
    return out


def _stop_and_check(
    argv: list[str],
    tmp_path: Path,
    ready: Callable[[list[psutil.Process]], bool],
    what: str,
    sig: signal.Signals,
    work_dir: Callable[[str], str],
) -> str:
    """Start ``argv``; once ``ready(its processes)``, send ``sig`` to it alone; it must exit
    128 + sig saying so, and every process it started must be gone: those seen as its
    children until it exited, and any naming its work dir (``work_dir(its output so far)``),
    such as one it was starting when the signal came. Returns its output."""
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
        work = work_dir(out_file.read_text())
        os.kill(command.pid, sig)
        deadline = time.monotonic() + 120
        while command.poll() is None:
            started.extend(p for p in _started(me) if p not in started)
            assert time.monotonic() < deadline, "the command did not exit within 120 s"
            time.sleep(0.05)  # another process's state: there is no event to wait on
        started.extend(p for p in _naming(work) if p not in started)
        deadline = time.monotonic() + 30
        while left := _survivors(started):
            assert time.monotonic() < deadline, f"still running 30 s after it stopped: {left}"
            time.sleep(0.2)  # other processes' state: there is no event to wait on
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

    def logs_dir(output: str) -> str:
        found = re.search(r"logs in (/\S+?)\)", output)
        assert found, output
        return found[1]

    _stop_and_check(argv, tmp_path, all_kinds, "the master, agents and workers", sig, logs_dir)


def test_a_stopped_scenario_leaves_no_process(tmp_path: Path) -> None:
    work = str(tmp_path / "work")
    argv = [*CORRAL, "scenario", "batch-wave", "--work-dir", work]

    def cluster_up(procs: list[psutil.Process]) -> bool:
        return _runs(procs, "master") and _runs(procs, "agent")

    what = "the scenario's master and agents"
    _stop_and_check(argv, tmp_path, cluster_up, what, signal.SIGTERM, lambda _: work)
