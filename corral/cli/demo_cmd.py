"""`corral demo`: a master, three agents (zones a, b, c) and the example framework, as real
processes on this machine; runs until Ctrl-C or ``--duration``, then prints a summary."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from corral.cli.common import DEFAULT_HTTP, DEFAULT_MASTER, host_port
from corral.cli.errors import CliError

ZONES = ("a", "b", "c")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("demo", help="run a local cluster with the example framework")
    p.add_argument(
        "--duration",
        type=float,
        default=None,
        metavar="SECONDS",
        help="stop after this long and print a summary (default: until Ctrl-C)",
    )
    p.add_argument("--grpc", type=host_port, default=DEFAULT_MASTER, metavar="HOST:PORT")
    p.add_argument("--http", type=host_port, default=DEFAULT_HTTP, metavar="HOST:PORT")
    p.add_argument(
        "--tasks",
        type=int,
        default=6,
        metavar="N",
        help="tasks per run of the example framework (default 6)",
    )
    p.add_argument(
        "--work-dir",
        type=Path,
        default=None,
        help="where agents keep sandboxes and logs (default: a temporary folder)",
    )
    p.set_defaults(func=run, needs_server=True)


class Cluster:
    """The demo's processes; every one is stopped on exit, whatever happens."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.procs: list[tuple[str, subprocess.Popen[bytes]]] = []

    def spawn(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        log = open(self.work / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen(
            [sys.executable, "-m", "corral.cli.main", *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self.procs.append((name, proc))
        return proc

    def stop(self) -> None:
        for _name, proc in reversed(self.procs):
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        for _name, proc in self.procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()

    def dead(self) -> list[str]:
        return [n for n, p in self.procs if not n.startswith("hello") and p.poll() is not None]


MASTER_START_TIMEOUT = 120.0


def _wait_for(path: Path, proc: subprocess.Popen[bytes], timeout: float) -> dict[str, str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            data: dict[str, str] = json.loads(path.read_text())
            return data
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    if proc.poll() is None:
        raise CliError(
            f"the master did not start within {timeout:g} s (see {path.parent / 'master.log'})"
        )
    raise CliError(f"the master did not start (see {path.parent / 'master.log'})")


def run(args: argparse.Namespace) -> int:
    from corral.cli.get_cmd import fetch_state

    if args.tasks < 1:
        raise CliError("--tasks must be at least 1", exit_code=2)
    temp = None
    if args.work_dir is None:
        temp = tempfile.TemporaryDirectory(prefix="corral-demo-")
        work = Path(temp.name)
    else:
        work = args.work_dir
        work.mkdir(parents=True, exist_ok=True)
    cluster = Cluster(work)
    interrupted = False
    runs: list[int] = []
    try:
        ready = work / "master.json"
        ready.unlink(missing_ok=True)
        master = cluster.spawn(
            "master",
            "master",
            "--grpc",
            args.grpc,
            "--http",
            args.http,
            "--ready-file",
            str(ready),
            "--log-json",
        )
        # A first start compiles the allocator (numba, cached afterwards): ~15 s on 2 busy
        # cores. The wait ends at once if the master exits, so a long bound costs nothing.
        addr = _wait_for(ready, master, MASTER_START_TIMEOUT)
        grpc_addr, http_addr = addr["grpc"], addr["http"]
        for zone in ZONES:
            cluster.spawn(
                f"agent-{zone}",
                "agent",
                "--master",
                grpc_addr,
                "--resources",
                "cpus:2;mem:2048;disk:4096;ports:[31000-32000]",
                "--attributes",
                f"zone:{zone}",
                "--hostname",
                f"demo-agent-{zone}",
                "--work-dir",
                str(work / f"agent-{zone}"),
            )
        print("Corral demo is running:")
        print(f"  master gRPC   {grpc_addr}")
        print(f"  master HTTP   http://{http_addr}/api/v1/state   (metrics: /metrics)")
        print(f"  try           corral get agents --master {grpc_addr}")
        print(f"                corral get tasks --master {grpc_addr}")
        print(f"  logs          {work}")
        print(
            "Press Ctrl-C to stop."
            if args.duration is None
            else f"Stopping in {args.duration:g} s."
        )
        sys.stdout.flush()
        deadline = None if args.duration is None else time.monotonic() + args.duration
        wave = 0
        hello: subprocess.Popen[bytes] | None = None
        while deadline is None or time.monotonic() < deadline:
            if cluster.dead():
                raise CliError(f"{', '.join(cluster.dead())} exited early (logs in {work})")
            if hello is None or hello.poll() is not None:
                if hello is not None:
                    runs.append(hello.returncode)
                    print(f"  example framework run {wave} exited {hello.returncode}")
                    sys.stdout.flush()
                wave += 1
                hello = cluster.spawn(
                    f"hello-{wave}",
                    "run",
                    "hello",
                    "--master",
                    grpc_addr,
                    "--tasks",
                    str(args.tasks),
                )
            time.sleep(0.2)
        state = fetch_state(grpc_addr, 5)
    except KeyboardInterrupt:
        interrupted = True
        state = None
    finally:
        cluster.stop()
        if temp is not None:
            temp.cleanup()
    if interrupted or state is None:
        print("stopped")
        return 0
    from corral.cli.get_cmd import rows

    _, tasks, _ = rows("tasks", state)
    by_state = Counter(r[3] for r in tasks)
    print(
        f"Summary: {len(state.agents)} agents, {len(state.frameworks)} framework runs, "
        f"{len(tasks)} tasks: " + ", ".join(f"{n} {s}" for s, n in sorted(by_state.items()))
    )
    print(f"  example framework runs completed: {len(runs)}, succeeded: {runs.count(0)}")
    ok = bool(runs) and all(code == 0 for code in runs) and by_state.get("FINISHED", 0) > 0
    return 0 if ok else 1
