"""`corral demo --duration N` runs a real local cluster with the three frameworks, exits 0,
reports what each did, and leaves no process behind; SIGTERM stops it as cleanly; its agents'
ports are blocks reserved on this host; a failed start says why and keeps its log."""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import os
import re
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from corral.frameworks.sdk import tls as sdk_tls
from corral.frameworks.sdk.testing import port_blocks
from corral.v1 import common_pb2, operator_pb2, operator_pb2_grpc

pytestmark = pytest.mark.e2e

CORRAL = (sys.executable, "-m", "corral.cli.main")


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


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _of_demo(proc: psutil.Process, work: str) -> bool:
    """A process the demo started: it names the work dir, or runs a task in a sandbox in it."""
    try:
        if any(work in arg for arg in proc.cmdline()):
            return True
        return proc.environ().get("CORRAL_SANDBOX", "").startswith(work)
    except psutil.Error:
        return False


def get_state(master: str) -> operator_pb2.State:
    with sdk_tls.channel(master, sdk_tls.resolve()) as channel:
        stub = operator_pb2_grpc.OperatorStub(channel)  # type: ignore[no-untyped-call]
        state: operator_pb2.State = stub.GetState(operator_pb2.GetStateRequest(), timeout=30)
        return state


def _wait(check: Callable[[], object], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out after {timeout:g} s waiting for {what}"
        time.sleep(0.2)  # other processes' state: there is no event to wait on


def test_sigterm_stops_the_demo_and_everything_it_started_and_its_ports_are_its_own(
    tmp_path: Path,
) -> None:
    work = tmp_path / "demo"
    held = port_blocks.reserve()  # another Corral on this host holds these ports
    out_file = tmp_path / "demo.out"
    with out_file.open("wb") as out:
        demo = subprocess.Popen(
            [
                *CORRAL,
                "demo",
                *("--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0"),
                "--work-dir",
                str(work),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own group, as `timeout` makes for what it runs
        )
    try:
        header = re.compile(r"master gRPC\s+(\S+)")
        _wait(lambda: header.search(out_file.read_text()), 120, "the demo's master")
        match = header.search(out_file.read_text())
        assert match, out_file.read_text()
        master = match.group(1)

        def running() -> set[str]:
            state = get_state(master)
            names = {f.info.id: f.info.name for f in state.frameworks}
            return {
                names.get(t.info.framework_id, "")
                for t in state.tasks
                if t.status.state == common_pb2.TASK_STATE_RUNNING
            }

        _wait(lambda: {"serving:web", "batch:wave"} <= running(), 120, "serving and batch tasks")

        # Each agent offers a block of ports reserved on this host (not the fixed
        # 31000-34999 of before): disjoint from each other's and from the block we hold,
        # and held for as long as the demo runs, so a second Corral here takes others.
        agents = get_state(master).agents
        ranges = sorted((r.begin, r.end) for a in agents for r in a.info.resources.ports)
        assert len(ranges) == 4 and len(agents) == 4, agents
        for (_, end), (begin, _) in itertools.pairwise(ranges):
            assert end < begin, ranges
        assert all(end < held.begin or begin > held.end for begin, end in ranges), ranges
        for begin, end in ranges:
            assert end - begin + 1 == port_blocks.SIZE and begin >= port_blocks.FIRST
            assert _locked(begin), f"the demo does not hold its ports {begin}-{end}"

        started = psutil.Process(demo.pid).children(recursive=True)
        tasks = [p for p in started if _of_demo(p, str(work)) and not _names_work(p, work)]
        assert tasks, "no task process found under the demo"

        os.killpg(demo.pid, signal.SIGTERM)  # what `timeout 300 make demo` does at 300 s
        demo.wait(timeout=120)
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.wait()
        held.release()
    output = out_file.read_text()
    assert demo.returncode == 0, output
    assert "stopped (SIGTERM)" in output, output
    # The summary, as after --duration (issue #40: a stopped demo printed none).
    assert re.search(r"Summary: 4 agents, \d+ framework runs, \d+ tasks", output), output
    survivors = [p for p in started if _alive(p)]
    assert survivors == [], f"still running after the demo stopped: {survivors}"
    leftover = [p for p in psutil.process_iter() if _of_demo(p, str(work)) and _alive(p)]
    assert leftover == [], f"demo left processes running: {leftover}"
    assert not any(_locked(begin) for begin, _ in ranges), "the demo kept its ports"


def _names_work(proc: psutil.Process, work: Path) -> bool:
    try:
        return any(str(work) in arg for arg in proc.cmdline())
    except psutil.Error:
        return False


def _locked(begin: int) -> bool:
    """Whether some process holds the port block starting at ``begin``."""
    path = port_blocks.lock_dir() / f"{begin}.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # and with it any lock we took
    return False


def test_a_failed_start_keeps_the_log_it_names_and_says_the_port_is_taken(
    tmp_path: Path,
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [*CORRAL, "demo", "--grpc", f"127.0.0.1:{port}", "--http", "127.0.0.1:0"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env={**os.environ, "TMPDIR": str(tmp_path)},  # where its temporary folder goes
        )
    assert result.returncode == 1, result.stdout + result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(
        f"corral demo: the master did not start: cannot start: cannot listen for gRPC on "
        f"127.0.0.1:{port}: the port is taken"
    ), line
    named = re.search(r"\(its log: (\S+)\)$", line)
    assert named, line
    log = Path(named.group(1))
    assert log.parent.parent == tmp_path and log.exists(), line
    assert "corral master: cannot start: cannot listen for gRPC" in log.read_text()


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")


def test_ctrl_c_in_an_80_by_24_terminal_prints_a_summary_and_the_view_fits(
    tmp_path: Path,
) -> None:
    """Issue #40: on an 80 x 24 terminal the live view was cut (rich's overflow "..."), and
    Ctrl-C stopped the demo without its summary. In a pseudo-terminal of that size, as a user
    runs `make demo`: the view never overflows, and Ctrl-C ends with the summary, exit 0."""
    import pty
    import struct
    import termios

    work = tmp_path / "demo"
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["TERM"] = "xterm-256color"
    demo = subprocess.Popen(
        [
            *CORRAL,
            "demo",
            *("--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0"),
            "--work-dir",
            str(work),
        ],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env=env,
        start_new_session=True,  # a terminal's Ctrl-C goes to its foreground group: this one
    )
    os.close(follower)
    out = bytearray()

    def read_some() -> bool:
        """What the demo wrote since; False once it closed the terminal."""
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: every writer closed the terminal
            return False
        out.extend(chunk)
        return bool(chunk)

    def screen() -> str:
        return ANSI.sub("", out.decode(errors="replace"))

    try:
        os.set_blocking(leader, False)

        def shows_the_fleet() -> bool:
            with contextlib.suppress(BlockingIOError):
                read_some()
            return "serving:web" in screen() and "last cluster events" in screen()

        _wait(shows_the_fleet, 180, "the live view with the serving framework and events")
        os.killpg(demo.pid, signal.SIGINT)  # Ctrl-C
        deadline = time.monotonic() + 150
        while demo.poll() is None and time.monotonic() < deadline:
            if select.select([leader], [], [], 0.5)[0]:
                read_some()  # read as it writes, or its writes to the terminal would block
        with contextlib.suppress(BlockingIOError):
            while read_some():  # what it wrote last
                pass
        demo.wait(timeout=30)
    finally:
        if demo.poll() is None:  # failed before its end: stopped as a user would, then killed
            os.killpg(demo.pid, signal.SIGTERM)
            os.set_blocking(leader, False)
            deadline = time.monotonic() + 120
            while demo.poll() is None and time.monotonic() < deadline:
                with contextlib.suppress(BlockingIOError):
                    read_some()  # read, or its writes to the terminal would block its stop
                time.sleep(0.1)
            if demo.poll() is None:
                os.killpg(demo.pid, signal.SIGKILL)
                demo.wait()
        os.close(leader)
    text = screen()
    assert demo.returncode == 0, text[-4000:]
    assert "stopped (SIGINT)" in text, text[-4000:]
    assert re.search(r"Summary: 4 agents, \d+ framework runs, \d+ tasks", text), text[-4000:]
    assert "serving: " in text.split("Summary:")[-1], text[-4000:]
    # rich's mark of a live view taller than the terminal: a line of "..." alone, centred.
    assert not [line for line in text.splitlines() if line.strip() == "..."], text[-4000:]
    assert "Press Ctrl-C to stop (a summary follows)." in text
    leftover = [p for p in psutil.process_iter() if _of_demo(p, str(work)) and _alive(p)]
    assert leftover == [], f"demo left processes running: {leftover}"
