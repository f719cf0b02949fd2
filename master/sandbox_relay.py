"""Reads of tasks' sandbox files, relayed through the agents' own streams (`corral logs`).

An agent holds one stream to the master and listens on no port, so an operator cannot reach it:
the master sends the agent a ReadSandboxFile on that stream and waits for the SandboxFileChunk
with the same request id. Rules:
1. Bounded: at most ``MAX_PENDING`` reads wait at once (beyond: refused, RESOURCE_EXHAUSTED),
   each at most ``CHUNK_BYTES``, each for at most ``READ_TIMEOUT`` seconds.
2. A chunk counts only from the connection its request went on; a stream that ends fails the
   reads waiting on it (UNAVAILABLE).
3. The agent decides what is in the sandbox (agent/sandbox_files.py); the master refuses a path
   that is not relative and inside it before asking.
"""

from __future__ import annotations

import asyncio
import itertools
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from corral.limits import echo
from corral.master.core.refusals import CallRejected, Refusal
from corral.v1 import agent_pb2

if TYPE_CHECKING:
    from corral.master.runtime import MasterRuntime

MAX_PENDING = 64
CHUNK_BYTES = 256 * 1024
READ_TIMEOUT = 10.0
MAX_PATH = 1024


def check_path(path: str) -> str:
    """Rule 3's check; the path ("stdout" when empty) or CallRejected(INVALID_ARGUMENT)."""
    path = path or "stdout"
    p = PurePosixPath(path)
    if len(path) > MAX_PATH or "\0" in path or p.is_absolute() or ".." in p.parts:
        raise CallRejected(
            Refusal.INVALID_ARGUMENT,
            f"path {echo(path)} is not a relative path inside the task's sandbox",
        )
    return path


class SandboxRelay:
    def __init__(self, runtime: MasterRuntime) -> None:
        self._rt = runtime
        self._ids = itertools.count(1)
        self._pending: dict[int, tuple[int, asyncio.Future[agent_pb2.SandboxFileChunk]]] = {}

    async def read(
        self, agent_id: str, request: agent_pb2.ReadSandboxFile
    ) -> agent_pb2.SandboxFileChunk:
        """One read on ``agent_id``'s stream (rules 1 and 2); CallRejected when it cannot be."""
        rt = self._rt
        connection = rt.connection_of(agent_id)
        stream = rt.agent_streams.get(connection) if connection is not None else None
        if connection is None or stream is None:
            raise CallRejected(
                Refusal.UNAVAILABLE,
                f"agent {agent_id} is not connected: its sandboxes cannot be read now",
            )
        if len(self._pending) >= MAX_PENDING:
            raise CallRejected(
                Refusal.RESOURCE_EXHAUSTED,
                f"{MAX_PENDING} sandbox reads already wait for agents: try again later",
            )
        request_id = next(self._ids)
        future: asyncio.Future[agent_pb2.SandboxFileChunk] = (
            asyncio.get_running_loop().create_future()
        )
        self._pending[request_id] = (connection, future)
        msg = agent_pb2.MasterMessage(read_file=request)
        msg.read_file.request_id = request_id
        msg.read_file.max_bytes = min(request.max_bytes or CHUNK_BYTES, CHUNK_BYTES)
        if rt.core.epoch:
            msg.epoch = rt.core.epoch
        stream.put(msg)
        try:
            async with asyncio.timeout(READ_TIMEOUT):
                return await future
        except TimeoutError:
            raise CallRejected(
                Refusal.UNAVAILABLE,
                f"agent {agent_id} did not answer a sandbox read within {READ_TIMEOUT:g}s",
            ) from None
        finally:
            self._pending.pop(request_id, None)

    def deliver(self, connection: int, chunk: agent_pb2.SandboxFileChunk) -> None:
        """A chunk came in on ``connection`` (rule 2)."""
        entry = self._pending.get(chunk.request_id)
        if entry is not None and entry[0] == connection and not entry[1].done():
            entry[1].set_result(chunk)

    def connection_closed(self, connection: int, agent_id: str) -> None:
        for conn, future in list(self._pending.values()):
            if conn == connection and not future.done():
                future.set_exception(
                    CallRejected(
                        Refusal.UNAVAILABLE,
                        f"agent {agent_id}'s stream ended before it answered the read",
                    )
                )
