"""The task shim: the parent of one task's process, so its exit status outlives the agent.

``python shim.py HANDSHAKE_FD EXIT_STATUS_PATH ARGV...`` (run by path, stdlib only, so it starts
fast and needs no import path). The agent starts the shim in a session of its own; the shim:

1. starts ARGV in a new process group (pgid == the task's pid), inheriting stdio, cwd and env;
2. writes ``started <pid>`` (or ``error <message>`` when ARGV cannot be started) to
   HANDSHAKE_FD, a pipe from the agent, and closes it;
3. waits for the task without reaping it, SIGKILLs what is left of its group (no orphans
   outlive the task), reaps it, and writes how it ended to EXIT_STATUS_PATH as JSON
   (``{"exit_code": n}`` or ``{"signal": n}``), atomically (temp file + rename);
4. exits 0.

A task is killed by signalling its group (the agent does that); the shim is in another group, so
it survives to record the signal. The agent may die at any time (kill -9): the shim does not care
(a failed handshake write is ignored) and the agent, restarted, finds the status file. If the
shim itself dies, the kernel SIGKILLs the task's main process (PR_SET_PDEATHSIG), so a task never
runs unwatched.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import sys

_PR_SET_PDEATHSIG = 1


def _preexec() -> None:
    with contextlib.suppress(Exception):  # Linux only; elsewhere the task just outlives a shim
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _ignore(signum: int, frame: object) -> None:
    pass


def _write_status(path: str, status: dict[str, int | str]) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(status, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def main(argv: list[str]) -> int:
    handshake_fd, status_path, command = int(argv[0]), argv[1], argv[2:]
    # Kills are for the task's group, not for the shim: a no-op handler (not SIG_IGN, which the
    # task would inherit through exec; a handler is reset to the default there).
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM, signal.SIGQUIT):
        signal.signal(sig, _ignore)
    import subprocess

    try:
        proc = subprocess.Popen(
            command,
            process_group=0,
            preexec_fn=_preexec,
            restore_signals=True,
            close_fds=True,
        )
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        message = f"cannot start {command[0]!r}: {reason}" if command else "no command"
        with contextlib.suppress(OSError):
            os.write(handshake_fd, f"error {message}\n".encode())
        _write_status(status_path, {"launch_error": message})
        return 0
    with contextlib.suppress(OSError):  # the agent may be gone: its checkpoint has our pid
        os.write(handshake_fd, f"started {proc.pid}\n".encode())
    with contextlib.suppress(OSError):
        os.close(handshake_fd)
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
