"""A container log copy's cursor: a restarted copier goes on with no line twice and none lost."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from corral.agent.log_cursor import (
    CursorWriter,
    Resume,
    copy_log,
    read_resume,
    stamp_ns,
)

T0 = 1_765_000_000 * 1_000_000_000


def test_stamps_are_read_to_the_nanosecond() -> None:
    assert stamp_ns("2026-12-06T10:00:00.000000001Z") == stamp_ns("2026-12-06T10:00:00Z") + 1  # type: ignore[operator]
    assert stamp_ns("2026-12-06T10:00:00.5Z") == stamp_ns("2026-12-06T10:00:00Z") + 500_000_000  # type: ignore[operator]
    assert stamp_ns("1970-01-01T00:00:01.000000002Z") == 1_000_000_002
    assert stamp_ns("not-a-time") is None
    assert stamp_ns("2026-12-06T10:00:00.12x4Z") is None


class AgentKilled(Exception):
    pass


def stamp(at_ns: int) -> str:
    seconds, ns = divmod(at_ns, 1_000_000_000)
    return f"{datetime.fromtimestamp(seconds, UTC):%Y-%m-%dT%H:%M:%S}.{ns:09d}Z"


async def engine(
    log: list[tuple[int, str]], resume: Resume | None, kill_after: int | None = None
) -> AsyncIterator[str]:
    """The engine's ``logs?follow&timestamps&since``: stamped lines from ``since`` (whole
    seconds) on; the copier's agent killed after ``kill_after`` lines."""
    since = resume.since_seconds * 1_000_000_000 if resume is not None else 0
    for n, (at, text) in enumerate(log):
        if kill_after is not None and n == kill_after:
            raise AgentKilled
        if at >= since:
            yield f"{stamp(at)} {text}"


def engine_log(count: int, spacing_ns: int) -> list[tuple[int, str]]:
    return [(T0 + i * spacing_ns, f"tick {i}\n") for i in range(count)]


@settings(deadline=None)
@given(
    count=st.integers(1, 40),
    spacing_ns=st.sampled_from([1, 1_000, 3_000_000, 400_000_000]),
    data=st.data(),
    between=st.booleans(),
)
async def test_a_copy_killed_anywhere_and_resumed_holds_every_line_once(
    count: int, spacing_ns: int, data: st.DataObject, between: bool
) -> None:
    log = engine_log(count, spacing_ns)
    kill_after = data.draw(st.integers(0, count), label="kill_after")
    with tempfile.TemporaryDirectory() as d:
        sandbox, cursor = Path(d) / "stdout", Path(d) / "stdout.copied"
        sandbox.touch()
        with contextlib.suppress(AgentKilled):
            await copy_log(engine(log, None, kill_after), sandbox, cursor, None)
        if between and kill_after > 0:
            # Killed after the last line's write, before its cursor's: the cursor one line back.
            back = CursorWriter(cursor)
            last = log[kill_after - 2][0] if kill_after > 1 else 0
            back.record(last, sandbox.stat().st_size - len(log[kill_after - 1][1]))
            back.close()
        resume = read_resume(cursor, sandbox)
        await copy_log(engine(log, resume), sandbox, cursor, resume)
        assert sandbox.read_text() == "".join(text for _, text in log)


def test_no_cursor_and_no_file_copies_from_the_first_line(tmp_path: Path) -> None:
    assert read_resume(tmp_path / "stdout.copied", tmp_path / "stdout") is None


def test_a_file_copied_before_cursors_resumes_from_its_mtime(tmp_path: Path) -> None:
    sandbox = tmp_path / "stdout"
    sandbox.write_bytes(b"tick 0\n")
    os.utime(sandbox, ns=(T0, T0))
    assert read_resume(tmp_path / "stdout.copied", sandbox) == Resume(after_ns=T0)


def test_a_file_emptied_by_someone_else_skips_nothing(tmp_path: Path) -> None:
    sandbox, cursor_path = tmp_path / "stdout", tmp_path / "stdout.copied"
    sandbox.write_bytes(b"")
    cursor = CursorWriter(cursor_path)
    cursor.record(T0 + 5, 1_000)
    cursor.close()
    assert read_resume(cursor_path, sandbox) == Resume(after_ns=T0 + 5, skip_bytes=0)


def test_the_cursor_is_rewritten_in_place_at_a_fixed_width(tmp_path: Path) -> None:
    path = tmp_path / "stdout.copied"
    cursor = CursorWriter(path)
    cursor.record(T0 + 123_456_789, 10_000_000)
    cursor.record(1, 2)
    cursor.close()
    raw = path.read_bytes()
    assert raw.split() == [b"1", b"2"]
    assert len(raw) == 48
