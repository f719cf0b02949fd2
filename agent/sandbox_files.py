"""Reading a task's sandbox files for the master (`corral logs`), never outside the sandbox.

The master asks on the agent's stream (ReadSandboxFile); this module answers one request with a
SandboxFileChunk. Rules:
1. A task's sandbox is ``work_dir/sandboxes/<framework>/<task>``, or the newest ``.N`` of it
   (a task id used again gets a fresh folder: executor_process.py). None there: NOT_FOUND,
   "the sandbox is gone" (removed, or the task never ran on this agent).
2. The path is relative; its resolved form (links followed) must be inside the sandbox's
   resolved form and a regular file: anything else is INVALID, and nothing is read.
3. At most ``MAX_READ`` bytes a read. A negative offset asks for the last ``tail_lines``
   lines: the agent looks back at most ``TAIL_LOOKBACK`` bytes for them.
4. The file is read in a worker thread (Agent.on_message): a slow disk never stalls the stream.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from corral.agent.checkpoint import safe_name
from corral.v1 import agent_pb2

MAX_READ = 1024 * 1024
TAIL_LOOKBACK = 1024 * 1024


def sandbox_of(sandboxes: Path, framework_id: str, task_id: str) -> Path | None:
    """Rule 1: the task's newest sandbox, or None."""
    base = sandboxes / safe_name(framework_id) / safe_name(task_id)
    best, best_n = (base, 1) if base.is_dir() else (None, 0)
    parent = base.parent
    if parent.is_dir():
        prefix = base.name + "."
        for entry in parent.iterdir():
            suffix = entry.name[len(prefix) :] if entry.name.startswith(prefix) else ""
            if suffix.isdigit() and int(suffix) > best_n and entry.is_dir():
                best, best_n = entry, int(suffix)
    return best


def _inside(sandbox: Path, path: str) -> Path | None:
    """Rule 2: the file, or None if the path leads out of the sandbox or to no regular file."""
    p = PurePosixPath(path)
    if not path or p.is_absolute() or ".." in p.parts or "\0" in path:
        return None
    root = sandbox.resolve()
    target = (root / path).resolve()
    if target != root and root not in target.parents:
        return None
    return target if target.is_file() else None


def _tail_start(f: int, size: int, lines: int) -> int:
    """Where the last ``lines`` lines of an open file start (rule 3)."""
    if lines <= 0:
        return size
    start = max(0, size - TAIL_LOOKBACK)
    os.lseek(f, start, os.SEEK_SET)
    data = os.read(f, size - start)
    end = len(data)
    if data.endswith(b"\n"):
        end -= 1  # a final newline ends the last line, it does not start another
    at = end
    for _ in range(lines):
        at = data.rfind(b"\n", 0, at)
        if at < 0:
            return start
    return start + at + 1


def read(sandboxes: Path, request: agent_pb2.ReadSandboxFile) -> agent_pb2.SandboxFileChunk:
    """Answer one request (rules 1-3)."""
    out = agent_pb2.SandboxFileChunk(request_id=request.request_id)
    sandbox = sandbox_of(sandboxes, request.framework_id, request.task_id)
    if sandbox is None:
        out.error = agent_pb2.SANDBOX_READ_ERROR_NOT_FOUND
        out.message = "the sandbox is gone (removed, or the task never ran on this agent)"
        return out
    path = _inside(sandbox, request.path)
    if path is None:
        out.error = agent_pb2.SANDBOX_READ_ERROR_INVALID
        out.message = f"{request.path[:64]!r} is no file inside the task's sandbox"
        return out
    limit = min(request.max_bytes or MAX_READ, MAX_READ)
    try:
        f = os.open(path, os.O_RDONLY)
        try:
            size = os.fstat(f).st_size
            if request.offset < 0:
                offset = _tail_start(f, size, request.tail_lines)
            else:
                offset = min(request.offset, size)
            os.lseek(f, offset, os.SEEK_SET)
            out.data = os.read(f, min(limit, size - offset))
        finally:
            os.close(f)
    except OSError as exc:
        out.error = agent_pb2.SANDBOX_READ_ERROR_IO
        out.message = f"cannot read it: {exc.strerror or exc}"
        return out
    out.offset, out.size = offset, size
    return out
