"""Port blocks for clusters side by side: held by a lock per block, by any process on the host,
until released or the holder dies, and skipped while something listens on one of their ports.
The tests use ranges of their own: below the clusters' (20000 up) and the kernel's ephemeral
ports (32768 up), where no cluster and no port-0 listener of a parallel test lands."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys

import pytest

from corral.frameworks.sdk.testing import port_blocks

FIRST, LAST = 19000, 19299  # three blocks of 100


def test_blocks_are_distinct_until_released() -> None:
    a = port_blocks.reserve(first=FIRST, last=LAST)
    b = port_blocks.reserve(first=FIRST, last=LAST)
    try:
        assert (a.begin, a.end) == (19000, 19099)
        assert (b.begin, b.end) == (19100, 19199)
        assert a.range == "[19000-19099]"
        a.release()
        again = port_blocks.reserve(first=FIRST, last=LAST)
        assert again.begin == 19000  # released: free for the next cluster
        again.release()
    finally:
        a.release()
        b.release()


def test_every_block_held_is_a_clear_error() -> None:
    held = [port_blocks.reserve(first=FIRST, last=LAST) for _ in range(3)]
    try:
        held_or_used = r"every block of 100 ports .* held by another cluster or has a port"
        with pytest.raises(port_blocks.NoPortBlock, match=held_or_used):
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


def _listener_in(first: int, last: int) -> socket.socket:
    for port in range(first, last + 1):
        try:
            return socket.create_server(("127.0.0.1", port))
        except OSError:
            continue
    raise AssertionError(f"no port of {first}-{last} could be bound")


def test_a_block_with_a_port_something_listens_on_is_skipped() -> None:
    # A task left listening by a cluster that died: the block's lock is free, its port is not.
    first, last = 19300, 19499  # two blocks: the first holds the listened port
    with _listener_in(first, first + 99):
        block = port_blocks.reserve(first=first, last=last)
        try:
            assert (block.begin, block.end) == (first + 100, last)
        finally:
            block.release()
    after = port_blocks.reserve(first=first, last=last)
    try:
        assert after.begin == first  # nothing listens any more
    finally:
        after.release()
