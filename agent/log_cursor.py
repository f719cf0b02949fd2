"""Where a container's log copy stopped, so a restarted agent copies on with no line twice or lost.

The engine stamps every log line (nanoseconds). After each line is appended to the sandbox's
``stdout`` or ``stderr`` the copier records, per stream, that line's stamp and the sandbox
file's size in a cursor file of fixed width (one ``pwrite`` at offset 0: no truncation, no
partial record a reader could see as another). A restarted agent reads it back: lines stamped at
or before the cursor were copied; if the sandbox file is longer than the cursor says, the agent
was killed between the two writes, and that many bytes of the lines after the cursor are in the
file already and are skipped.

Why not the sandbox file's mtime, as before: the kernel stamps a write with its coarse clock (up
to a tick behind the engine's precise one), so a line copied within a tick of its stamp looked
uncopied and was copied twice; and one time for both streams lost the lines of the stream whose
copy lagged the other's.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

# "<stamp ns> <sandbox file size>", space-padded to a fixed width.
RECORD_BYTES = 48
NS_PER_SECOND = 1_000_000_000


def stamp_ns(stamp: str) -> int | None:
    """An engine log line's RFC 3339 time (UTC, to the nanosecond) as nanoseconds since 1970."""
    head, _, frac = stamp.rstrip("Z").partition(".")
    if not frac.isdigit() and frac:
        return None
    try:
        seconds = int(datetime.fromisoformat(f"{head}+00:00").timestamp())
    except ValueError:
        return None
    return seconds * NS_PER_SECOND + int((frac + "000000000")[:9])


@dataclass(frozen=True, slots=True)
class Resume:
    """Where a copy goes on: after the line stamped ``after_ns``, less ``skip_bytes`` more."""

    after_ns: int
    skip_bytes: int = 0

    @property
    def since_seconds(self) -> int:
        """The engine's ``since`` (whole seconds, at or before the cursor)."""
        return self.after_ns // NS_PER_SECOND


def read_resume(cursor: Path, copied: Path) -> Resume | None:
    """Where the copy into ``copied`` stopped; None if it never started (copy from the first line).

    A sandbox file with no readable cursor beside it was copied by an agent from before cursors:
    its mtime is the best there is."""
    try:
        copied_stat = copied.stat()
    except OSError:
        copied_stat = None
    try:
        fields = cursor.read_bytes().split()
        after_ns, recorded = int(fields[0]), int(fields[1])
    except (OSError, IndexError, ValueError):
        return None if copied_stat is None else Resume(after_ns=copied_stat.st_mtime_ns)
    # Shorter than recorded: the file was emptied by someone else; nothing to skip.
    size = copied_stat.st_size if copied_stat is not None else 0
    return Resume(after_ns=after_ns, skip_bytes=max(0, size - recorded))


class ResumeFilter:
    """The part of each line that still has to be copied (rule: stamped after the cursor, less
    the bytes already there)."""

    def __init__(self, resume: Resume | None) -> None:
        self._after = resume.after_ns if resume is not None else None
        self._skip = resume.skip_bytes if resume is not None else 0

    def remaining(self, at_ns: int | None, text: bytes) -> bytes:
        if self._after is not None and at_ns is not None and at_ns <= self._after:
            return b""
        if self._skip:
            taken = min(self._skip, len(text))
            self._skip -= taken
            return text[taken:]
        return text


class CursorWriter:
    """The cursor file, rewritten in place after every copied line."""

    def __init__(self, path: Path) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)

    def record(self, at_ns: int, size: int) -> None:
        line = f"{at_ns} {size}".encode()
        os.pwrite(self._fd, line.ljust(RECORD_BYTES - 1) + b"\n", 0)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)


async def copy_log(
    lines: AsyncIterator[str], path: Path, cursor_path: Path, resume: Resume | None
) -> None:
    """Append the engine's stamped lines (``<stamp> <text>``) to ``path`` from ``resume`` on,
    recording the cursor after each."""
    remaining = ResumeFilter(resume)
    cursor = CursorWriter(cursor_path)
    try:
        with path.open("ab") as out:
            if resume is None:  # a cursor from the first line: nothing copied yet
                cursor.record(0, out.tell())
            async for line in lines:
                stamp, _, text = line.partition(" ")
                at = stamp_ns(stamp)
                data = remaining.remaining(at, text.encode())
                if not data:
                    continue
                out.write(data)
                out.flush()
                if at is not None:
                    cursor.record(at, out.tell())
    finally:
        cursor.close()
