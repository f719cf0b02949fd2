"""Reading sandbox files for `corral logs` (agent/sandbox_files.py): the newest sandbox of a
task, bounded reads, the last N lines, and nothing outside the sandbox, links included."""

from __future__ import annotations

from pathlib import Path

from corral.agent import sandbox_files
from corral.v1 import agent_pb2


def _sandboxes(tmp_path: Path) -> Path:
    box = tmp_path / "sandboxes" / "fw" / "t1"
    box.mkdir(parents=True)
    (box / "stdout").write_bytes(b"".join(b"line %d\n" % i for i in range(100)))
    (box / "stderr").write_bytes(b"")
    (tmp_path / "secret").write_text("agent secret")
    (box / "escape").symlink_to(tmp_path / "secret")
    (box / "inside").symlink_to(box / "stdout")
    return tmp_path / "sandboxes"


def _read(sandboxes: Path, path: str, **fields: int) -> agent_pb2.SandboxFileChunk:
    request = agent_pb2.ReadSandboxFile(framework_id="fw", task_id="t1", path=path, **fields)
    return sandbox_files.read(sandboxes, request)


def test_reads_are_bounded_and_resume_at_an_offset(tmp_path: Path) -> None:
    sandboxes = _sandboxes(tmp_path)
    first = _read(sandboxes, "stdout", max_bytes=20)
    assert (first.error, first.offset, first.size, first.data) == (
        0,
        0,
        790,
        b"line 0\nline 1\nline 2",
    )
    rest = _read(sandboxes, "stdout", offset=20, max_bytes=7)
    assert rest.data == b"\nline 3" and rest.offset == 20
    end = _read(sandboxes, "stdout", offset=10**9)
    assert end.data == b"" and end.offset == end.size == 790


def test_the_last_lines(tmp_path: Path) -> None:
    sandboxes = _sandboxes(tmp_path)
    tail = _read(sandboxes, "stdout", offset=-1, tail_lines=2)
    assert tail.data == b"line 98\nline 99\n"
    everything = _read(sandboxes, "stdout", offset=-1, tail_lines=1000)
    assert everything.offset == 0 and everything.data.startswith(b"line 0\n")
    assert _read(sandboxes, "stderr", offset=-1, tail_lines=3).data == b""


def test_nothing_outside_the_sandbox_is_read(tmp_path: Path) -> None:
    sandboxes = _sandboxes(tmp_path)
    for path in ("../../../secret", "/etc/passwd", "escape", "", ".", "nope"):
        chunk = _read(sandboxes, path)
        assert chunk.error == agent_pb2.SANDBOX_READ_ERROR_INVALID, path
        assert chunk.data == b""
    assert _read(sandboxes, "inside").data.startswith(b"line 0")  # a link that stays inside


def test_the_newest_sandbox_of_a_task_id_and_a_gone_one(tmp_path: Path) -> None:
    sandboxes = _sandboxes(tmp_path)
    newer = sandboxes / "fw" / "t1.2"
    newer.mkdir()
    (newer / "stdout").write_bytes(b"second run\n")
    assert _read(sandboxes, "stdout").data == b"second run\n"
    gone = sandbox_files.read(
        sandboxes, agent_pb2.ReadSandboxFile(framework_id="fw", task_id="other", path="stdout")
    )
    assert gone.error == agent_pb2.SANDBOX_READ_ERROR_NOT_FOUND
    assert "the sandbox is gone" in gone.message
