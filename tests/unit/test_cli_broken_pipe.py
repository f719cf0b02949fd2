"""A reader that stops early (`corral scenario --list | head -1`) gets no traceback on the
terminal: the command exits as a process ended by SIGPIPE would."""

from __future__ import annotations

import os
import subprocess
import sys


def test_a_closed_pipe_ends_the_command_quietly() -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the command writes a line
    try:
        done = subprocess.run(
            [sys.executable, "-m", "corral.cli.main", "scenario", "--list"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)
    assert done.returncode == 141, done.stderr
    assert b"Traceback" not in done.stderr and b"BrokenPipe" not in done.stderr, done.stderr
