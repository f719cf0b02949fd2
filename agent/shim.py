"""The task shim: the parent of one task's process, so its exit status outlives the agent.

``python shim.py SOCKET_FD EXIT_STATUS_PATH ARGV...`` (run by path, stdlib only, so it starts
fast and needs no import path). The agent starts the shim in a session of its own; the shim:

1. waits for ``go`` on SOCKET_FD (one end of a socket pair; the agent sends it once it has
   checkpointed the shim's pid). End of file instead means the agent died before that: the task
   is not started (a task never runs unless the agent's checkpoint can find it). ``go PATHS``
   names cgroups' ``cgroup.procs`` files, separated by tabs: the task's process writes its pid
   to each between fork and exec, so all of its memory is charged to its cgroup
   (agent/memory_control.py) and its CPU limited by its CPU cgroup (agent/cpu_control.py);
2. starts ARGV in a new process group (pgid == the task's pid), inheriting stdio, cwd and env,
   and answers ``started <pid>`` (or ``error <message>`` when ARGV cannot be started, or its
   cgroup cannot be joined);
3. waits for the task without reaping it, SIGKILLs what is left of its group (no orphans
   outlive the task), reaps it, and writes how it ended to EXIT_STATUS_PATH as JSON
   (``{"exit_code": n}`` or ``{"signal": n}``), atomically (temp file + rename);
4. exits 0.

A task is killed by signalling its group (the agent does that); the shim is in another group, so
it survives to record the signal. The agent may die at any time (kill -9): the shim does not care
(a failed answer is ignored) and the agent, restarted, finds the status file. If the
shim itself dies, the kernel SIGKILLs the task's main process (PR_SET_PDEATHSIG), so a task never
runs unwatched.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import socket
import sys

_PR_SET_PDEATHSIG = 1


def _preexec(cgroup_procs: str) -> None:
    with contextlib.suppress(Exception):  # Linux only; elsewhere the task just outlives a shim
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    for procs in filter(None, cgroup_procs.split("\t")):
        # Raises (the launch fails, and says why) rather than run the task unlimited.
        with open(procs, "w") as f:
            f.write(str(os.getpid()))


def _ignore(signum: int, frame: object) -> None:
    pass


def _write_status(path: str, status: dict[str, int | str]) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(status, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _answer(sock: socket.socket, line: str) -> None:
    with contextlib.suppress(OSError):  # the agent may be gone: its checkpoint has our pid
        sock.sendall(f"{line}\n".encode())


def _wait_for_go(sock: socket.socket) -> str | None:
    """The cgroup to join ("" for none) once the agent says go; None if it never does."""
    data = b""
    while b"\n" not in data:
        try:
            chunk = sock.recv(4096)
        except InterruptedError:
            continue
        except OSError:
            return None
        if not chunk:
            return None
        data += chunk
    line = data.split(b"\n", 1)[0].decode(errors="replace")
    if line == "go":
        return ""
    if line.startswith("go "):
        return line[3:]
    return None


def main(argv: list[str]) -> int:
    sock_fd, status_path, command = int(argv[0]), argv[1], argv[2:]
    sock = socket.socket(fileno=sock_fd)
    # Kills are for the task's group, not for the shim: a no-op handler (not SIG_IGN, which the
    # task would inherit through exec; a handler is reset to the default there).
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM, signal.SIGQUIT):
        signal.signal(sig, _ignore)
    import subprocess

    cgroup_procs = _wait_for_go(sock)
    if cgroup_procs is None:
        _write_status(status_path, {"launch_error": "the agent stopped before the task started"})
        return 0
    for procs in filter(None, cgroup_procs.split("\t")):
        if not os.access(procs, os.W_OK):
            message = f"cannot join the task's cgroup: {procs} is not writable"
            _write_status(status_path, {"launch_error": message})
            _answer(sock, f"error {message}")
            return 0
    try:
        proc = subprocess.Popen(
            command,
            process_group=0,
            preexec_fn=lambda: _preexec(cgroup_procs),
            restore_signals=True,
            close_fds=True,
        )
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        message = f"cannot start {command[0]!r}: {reason}" if command else "no command"
        _write_status(status_path, {"launch_error": message})
        _answer(sock, f"error {message}")
        return 0
    _answer(sock, f"started {proc.pid}")
    sock.close()
    while True:
        try:
            os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
            break
        except ChildProcessError:
            break
        except InterruptedError:
            continue
    # Still a zombie, so its pid (and group id) cannot be reused: the group kill hits only
    # stragglers of this task.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    code = proc.wait()
    _write_status(status_path, {"exit_code": code} if code >= 0 else {"signal": -code})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
