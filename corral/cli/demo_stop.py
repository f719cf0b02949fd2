"""Stopping `corral demo` so that nothing of it is left running, on Ctrl-C, SIGTERM (``timeout
300 make demo``), SIGHUP, ``--duration`` or a failure alike.

Order matters: a task outlives its agent by design (docs/operations.md, "What survives an agent
restart"), so the tasks must be gone before the agents are stopped.

1. The serving service's app is deleted (the service keeps its apps through its own stop),
   then the frameworks get SIGTERM: each tears its framework down, and the master has the
   agents kill its tasks.
2. Wait until the master reports no live task (bounded).
3. The agents and the master get SIGTERM (SIGKILL after a grace period).
4. Any process still running a task of this demo (its ``CORRAL_SANDBOX`` is under the demo's
   work dir) or a task's shim (its command line names the work dir) is killed with its
   process group: what a framework or agent killed uncleanly left behind.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

import psutil

from corral.cli.demo_fleet import Processes
from corral.cli.errors import CliError
from corral.cli.get_cmd import fetch_state
from corral.tasks import TERMINAL_STATES, TaskState

TASKS_GRACE = 20.0  # the agents' kills: SIGTERM, the task's grace period (3 s), SIGKILL
SERVERS_GRACE = 10.0


def stop_everything(procs: Processes, master: str | None) -> int:
    """Stop every process of the demo (see the module's doc); returns how many task processes
    had to be killed in the last step (0 when the frameworks and agents did their part)."""
    procs.stop_frameworks()
    if master is not None and procs.alive("master"):
        _wait_for_tasks_to_end(master, TASKS_GRACE)
    procs.stop(grace=SERVERS_GRACE)
    killed = sweep(procs.work)
    procs.release_ports()
    return killed


def _live_tasks(master: str) -> int | None:
    try:
        state = fetch_state(master, 2)
    except CliError:
        return None
    return sum(1 for t in state.tasks if TaskState(t.status.state) not in TERMINAL_STATES)


def _wait_for_tasks_to_end(master: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        live = _live_tasks(master)
        if not live:  # none left, or the master no longer answers: nothing more to learn
            return
        time.sleep(0.2)  # another process's state: there is nothing to await


def _belongs_to(proc: psutil.Process, work: str) -> bool:
    """A task of the demo (its sandbox is under ``work``) or a task's shim (its arguments
    name a file under ``work``)."""
    with contextlib.suppress(psutil.Error):
        if proc.uids().real != os.getuid():
            return False
        sandbox = proc.environ().get("CORRAL_SANDBOX", "")
        if sandbox.startswith(work + os.sep):
            return True
        return any(arg.startswith(work + os.sep) for arg in proc.cmdline())
    return False


def leftovers(work: Path) -> list[psutil.Process]:
    """Processes that run a task of the demo in ``work``, or its shim. Never this process or
    one it runs under (``timeout 300 corral demo --work-dir W`` names W too)."""
    me = psutil.Process()
    spared = {me.pid, *(p.pid for p in me.parents())}
    root = str(work.resolve())
    return [p for p in psutil.process_iter() if p.pid not in spared and _belongs_to(p, root)]


def sweep(work: Path) -> int:
    """SIGKILL every leftover process of the demo and its process group (a task's pid is its
    group's id); returns how many there were."""
    found = leftovers(work)
    for proc in found:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(psutil.Error):
            proc.kill()
    psutil.wait_procs(found, timeout=5)
    return len(found)
