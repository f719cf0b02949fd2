"""Port blocks for clusters side by side: held by a lock per block, by any process on the host,
until released or the holder dies. The tests use a range of their own (no cluster uses it)."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from corral.frameworks.sdk.testing import port_blocks

FIRST, LAST = 40000, 40299  # three blocks of 100


def test_blocks_are_distinct_until_released() -> None:
    a = port_blocks.reserve(first=FIRST, last=LAST)
    b = port_blocks.reserve(first=FIRST, last=LAST)
    try:
        assert (a.begin, a.end) == (40000, 40099)
        assert (b.begin, b.end) == (40100, 40199)
        assert a.range == "[40000-40099]"
        a.release()
        again = port_blocks.reserve(first=FIRST, last=LAST)
        assert again.begin == 40000  # released: free for the next cluster
        again.release()
    finally:
        a.release()
        b.release()


def test_every_block_held_is_a_clear_error() -> None:
    held = [port_blocks.reserve(first=FIRST, last=LAST) for _ in range(3)]
    try:
        with pytest.raises(port_blocks.NoPortBlock, match="every block of 100 ports"):
            port_blocks.reserve(first=FIRST, last=LAST)
    finally:
        for block in held:
            block.release()


def test_another_process_holds_its_block_until_it_dies() -> None:
    code = (
        "import sys; from corral.frameworks.sdk.testing import port_blocks; "
        f"b = port_blocks.reserve(first={FIRST}, last={LAST}); print(b.begin, flush=True); "
        "sys.stdin.read()"
    )
    with subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as holder:
        try:
            assert holder.stdout is not None
            assert holder.stdout.readline().strip() == str(FIRST)
            mine = port_blocks.reserve(first=FIRST, last=LAST)
            assert mine.begin == FIRST + 100  # the other process's block is skipped
            mine.release()
            holder.send_signal(signal.SIGKILL)
            holder.wait(timeout=10)
            after = port_blocks.reserve(first=FIRST, last=LAST)
            assert after.begin == FIRST  # the kernel dropped the dead holder's lock
            after.release()
        finally:
            holder.kill()
