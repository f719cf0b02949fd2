"""`corral demo`: a master, four agents and the three frameworks (serving, batch waves, a gang
trainer) as real processes on this machine (demo_fleet.py), with a live view on a terminal
(demo_view.py); runs until Ctrl-C or ``--duration``, then prints a summary."""

from __future__ import annotations

import argparse
import contextlib
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from rich.live import Live

from corral.cli.common import DEFAULT_HTTP, DEFAULT_MASTER, host_port, positive_int
from corral.cli.demo_fleet import Fleet, Processes, ready_file, start_agents
from corral.cli.demo_view import Snapshot, render, status_line
from corral.cli.errors import CliError
from corral.cli.get_cmd import fetch_state, task_state_name
from corral.cli.operator_client import call_operator
from corral.stop_signals import stopping
from corral.v1 import common_pb2, operator_pb2


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "demo",
        help="run a local cluster with the serving, batch and gang frameworks",
        description="Start a master, four agents and the three shipped frameworks on this "
        "machine and show them sharing the cluster: a live view on a terminal, a status line "
        "every 5 s otherwise, and a summary at the end.",
    )
    p.add_argument(
        "--duration",
        type=float,
        default=None,
        metavar="SECONDS",
        help="stop after this long and print a summary (default: until Ctrl-C)",
    )
    p.add_argument(
        "--grpc",
        type=host_port,
        default=DEFAULT_MASTER,
        metavar="HOST:PORT",
        help=f"the master's gRPC address (default {DEFAULT_MASTER}; port 0: any free port)",
    )
    p.add_argument(
        "--http",
        type=host_port,
        default=DEFAULT_HTTP,
        metavar="HOST:PORT",
        help=f"the master's HTTP address (default {DEFAULT_HTTP}; port 0: any free port)",
    )
    p.add_argument(
        "--tasks",
        type=positive_int,
        default=24,
        metavar="N",
        help="tasks per batch wave (default 24)",
    )
    p.add_argument(
        "--work-dir",
        type=Path,
        default=None,
        help="where agents keep sandboxes and logs (default: a temporary folder)",
    )
    p.set_defaults(func=run, needs_server=True, starts_processes=True)


MASTER_START_TIMEOUT = 120.0


def _wait_for(path: Path, proc: subprocess.Popen[bytes], timeout: float) -> dict[str, str]:
    data = ready_file(path, proc, timeout)
    if data is not None:
        return data
    log = path.parent / "master.log"
    if proc.poll() is None:
        raise CliError(f"the master did not start within {timeout:g} s (its log: {log})")
    raise CliError(f"the master did not start: {_last_error(log)} (its log: {log})")


def _last_error(log: Path) -> str:
    """The master's own one-line error (``corral master: cannot start: ...``), with a hint
    when the reason is a port another Corral holds."""
    lines = log.read_text(errors="replace").splitlines() if log.exists() else []
    for line in reversed(lines):
        if line.startswith("corral master: "):
            reason = line.removeprefix("corral master: ")
            if "the port is taken" in reason:
                reason += (
                    "; is another demo running? "
                    "(--grpc 127.0.0.1:0 --http 127.0.0.1:0 picks free ports)"
                )
            return reason
    return f"it exited ({lines[-1] if lines else 'no output'})"


def run(args: argparse.Namespace) -> int:
    # SIGINT, SIGTERM and SIGHUP stop the demo as Ctrl-C does (``timeout 300 make demo``
    # sends SIGTERM), rather than kill it and leave its master, agents, frameworks and tasks
    # running: `corral` raises Stopped for them (starts_processes, corral/stop_signals.py).
    if args.work_dir is None:
        work = Path(tempfile.mkdtemp(prefix="corral-demo-"))
    else:
        work = args.work_dir
        work.mkdir(parents=True, exist_ok=True)
    return _run_in(work, args)


@dataclass
class _Progress:
    """What a run knows so far: what its summary needs, however it ends (Ctrl-C included)."""

    master: str = ""
    agents: int = 0
    fleet: Fleet | None = None
    snap: Snapshot | None = None
    served: int = 0  # serving instances running at once, at most


def _run_in(work: Path, args: argparse.Namespace) -> int:
    # Here, not at the top: it needs psutil (the server extra), and `corral --help` imports
    # this module on a base install too.
    from corral.cli.demo_stop import stop_everything

    keep = args.work_dir is not None  # a temporary folder goes, unless a message names it
    procs = Processes(work)
    progress = _Progress()
    try:
        return _run(args, procs, progress)
    except KeyboardInterrupt as stop:
        with contextlib.suppress(OSError):  # whoever read our output may be gone (make)
            name = stop.args[0] if stop.args else "SIGINT"
            print(f"stopped ({name}): stopping the frameworks, their tasks, the agents, the master")
            _summary_when_stopped(procs, progress)
        return 0
    except CliError:
        keep = True  # its message names the logs
        raise
    finally:
        stopping()  # from here on a signal changes nothing: the stop is bounded
        stop_everything(procs, procs.master)
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


def _summary_when_stopped(procs: Processes, progress: _Progress) -> None:
    """The summary of a run stopped by a signal, as at the end of ``--duration``: the
    frameworks are stopped first (each tears down), then the master is asked once more. A run
    stopped before its frameworks started has nothing to sum up."""
    if progress.fleet is None:
        print("Summary: stopped before the frameworks started")
        return
    procs.stop_frameworks()
    final = _snapshot(progress.master) or progress.snap
    if final is None:
        print("Summary: the master did not answer at the end of the demo")
        return
    _summary(final, progress.agents, progress.fleet, progress.served)


def _run(args: argparse.Namespace, procs: Processes, progress: _Progress) -> int:
    work = procs.work
    ready = work / "master.json"
    ready.unlink(missing_ok=True)
    master = procs.spawn(
        "master",
        "master",
        *("--grpc", args.grpc, "--http", args.http, "--ready-file", str(ready), "--log-json"),
        # The demo's own registry, gone with its work dir: not the user's default one.
        *("--work-dir", str(work / "master")),
    )
    # A first start compiles the allocator (numba, cached afterwards): ~15 s on 2 busy
    # cores. The wait ends at once if the master exits, so a long bound costs nothing.
    addr = _wait_for(ready, master, MASTER_START_TIMEOUT)
    grpc_addr, http_addr = addr["grpc"], addr["http"]
    procs.master = progress.master = grpc_addr
    agents = progress.agents = start_agents(procs, grpc_addr)
    header = [
        "Corral demo: serving, batch and a gang trainer share 4 agents (docs/frameworks.md)",
        f"  master gRPC   {grpc_addr}    try: corral get tasks --master {grpc_addr}",
        f"  master HTTP   https://{http_addr}/   (state: /api/v1/state, metrics: /metrics)",
        "  security      mutual TLS with this host's operator credential (~/.corral/tls); "
        "the page wants a token: corral token (docs/security.md)",
        f"  logs          {work}",
        "Press Ctrl-C to stop (a summary follows)."
        if args.duration is None
        else f"Stopping in {args.duration:g} s.",
    ]
    scale_at = 20.0 if args.duration is None else args.duration / 2
    try:
        fleet = Fleet(procs, grpc_addr, scale_at, batch_tasks=args.tasks)
    except (RuntimeError, OSError) as err:
        raise CliError(f"{err} (logs in {work})") from None
    progress.fleet = fleet
    header.insert(
        3,
        f"  serving API   {fleet.serving_url}/v1/apps   try: corral app list --serving "
        f"{fleet.serving_url}",
    )
    # What a small terminal (80 x 24) shows instead: the addresses, and how it ends.
    short_header = [
        f"Corral demo   master {grpc_addr}   https://{http_addr}/",
        f"  serving {fleet.serving_url}   logs {work}",
        header[-1],
    ]
    live = sys.stdout.isatty()
    if not live:
        print("\n".join(header), flush=True)
    began = time.monotonic()
    deadline = None if args.duration is None else began + args.duration
    snap: Snapshot | None = None
    served = 0
    with contextlib.ExitStack() as stack:
        view = stack.enter_context(Live(refresh_per_second=2, transient=False)) if live else None
        next_line = began
        while deadline is None or time.monotonic() < deadline:
            dead = procs.dead("agent") + procs.dead("master")
            if dead or fleet.serving_failed():
                what = ", ".join(dead) or "the serving framework"
                raise CliError(f"{what} exited early (logs in {work})")
            fleet.tick()
            snap = progress.snap = _snapshot(grpc_addr) or snap
            if snap is not None:
                served = progress.served = max(served, _serving_running(snap))
                if view is not None:
                    size = view.console.size  # the terminal's now: it may have been resized
                    view.update(render(snap, header, short_header, size.width, size.height))
                elif time.monotonic() >= next_line:
                    print(status_line(snap, time.monotonic() - began), flush=True)
                    next_line += 5
            time.sleep(1.0)
    procs.stop_frameworks()  # each tears its framework down
    final = _snapshot(grpc_addr) or snap
    return _summary(final, agents, fleet, served)


def _snapshot(master: str) -> Snapshot | None:
    """The master's state and recent events; None if it did not answer in time."""
    try:
        state = fetch_state(master, 2)
        events = call_operator(master, "GetEvents", operator_pb2.GetEventsRequest(), 2)
    except CliError:
        return None
    return Snapshot(state, list(events.events))


def _serving_running(snap: Snapshot) -> int:
    ids = {f.info.id for f in snap.state.frameworks if f.info.name == "serving:web"}
    return sum(
        1
        for t in snap.state.tasks
        if t.info.framework_id in ids and t.status.state == common_pb2.TASK_STATE_RUNNING
    )


def _summary(snap: Snapshot | None, agents: int, fleet: Fleet, served: int) -> int:
    if snap is None:
        raise CliError("the master did not answer at the end of the demo")
    by_state = Counter(task_state_name(t.status.state) for t in snap.state.tasks)
    print(
        f"Summary: {agents} agents, {len(snap.state.frameworks)} framework runs, "
        f"{len(snap.state.tasks)} tasks: "
        + ", ".join(f"{n} {s}" for s, n in sorted(by_state.items()))
    )
    print(f"  serving: {served} of {fleet.serving_wanted} instances running at most")
    waves = fleet.batch.summaries()
    print(
        f"  batch: {len(fleet.batch.codes)} waves ended, {fleet.batch.codes.count(0)} succeeded; "
        f"{sum(w.get('disruptions', 0) for w in waves)} tasks preempted (or otherwise "
        "disrupted) and retried"
    )
    trainings = [g for g in fleet.gang.summaries() if g.get("final_loss") is not None]
    loss = f", last final loss {trainings[-1]['final_loss']:.4g}" if trainings else ""
    print(
        f"  gang: {len(fleet.gang.codes)} trainings ended, "
        f"{fleet.gang.codes.count(0)} completed{loss}"
    )
    print(f"  preemptions: {snap.preemptions()} (cluster events)")
    runs = fleet.batch.codes + fleet.gang.codes
    ok = all(code == 0 for code in runs) and by_state.get("FINISHED", 0) > 0
    return 0 if ok else 1
