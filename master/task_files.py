"""A task's sandbox file as a stream of chunks (`corral logs`, Operator.ReadTaskFile and
``GET /api/v1/tasks/{id}/files/{path}``), read through its agent (sandbox_relay.py).

Rules:
1. The task is found as the core knows it, live or ended and still kept (operator_actions.py's
   ``find_task``): unknown is NOT_FOUND, a task id two frameworks use needs the framework.
2. Without ``follow`` the file is read from ``offset`` (or its last ``tail_lines`` lines) to
   its end as it is now, a chunk at a time. With ``follow`` the stream goes on: when a read
   reaches the end, the task's state is asked; a task still live is polled again after
   ``POLL_SECONDS``, an ended one is read once more (what it wrote last) and the stream ends.
3. Who may read: a principal granted ``ReadTaskFile`` (the ACLs' ``logs`` group), or the
   principal that subscribed the task's framework. Anyone else is refused PERMISSION_DENIED with
   the ACL's denial (counted and recorded as the guards do), also for a task that does not
   exist, so an ungranted caller learns nothing of other tenants' task ids.
4. The agent's refusals keep their meaning: a sandbox gone or never made is NOT_FOUND ("the
   sandbox of task T on agent A is gone"; for a task still STAGING or STARTING, "it has not
   started yet", and ``follow`` waits for it), a path outside it INVALID_ARGUMENT, a simulated
   agent FAILED_PRECONDITION, an agent not connected UNAVAILABLE.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass

from corral.acl import Principal
from corral.master.core.kills import find_task
from corral.master.core.master import MasterCore
from corral.master.core.refusals import CallRejected, Denied, Refusal
from corral.master.core.types import TaskState
from corral.master.runtime import MasterRuntime
from corral.master.sandbox_relay import CHUNK_BYTES, check_path
from corral.master.security import audit
from corral.master.security.endpoints import owner_denial
from corral.v1 import agent_pb2

POLL_SECONDS = 0.5
MAX_TAIL_LINES = 100_000

_ERRORS = {
    agent_pb2.SANDBOX_READ_ERROR_NOT_FOUND: Refusal.NOT_FOUND,
    agent_pb2.SANDBOX_READ_ERROR_INVALID: Refusal.INVALID_ARGUMENT,
    agent_pb2.SANDBOX_READ_ERROR_UNSUPPORTED: Refusal.FAILED_PRECONDITION,
    agent_pb2.SANDBOX_READ_ERROR_IO: Refusal.UNAVAILABLE,
}


@dataclass(frozen=True, slots=True)
class Where:
    framework_id: str
    task_id: str
    agent_id: str
    ended: bool
    starting: bool  # STAGING or STARTING: its sandbox may not be made yet
    owner: str  # the principal that subscribed its framework ("" on a plain-text master)


async def locate(rt: MasterRuntime, framework_id: str, task_id: str) -> Where:
    """Rule 1."""

    def run(core: MasterCore) -> Where:
        t = find_task(core, framework_id, task_id)
        starting = t.state in (TaskState.STAGING, TaskState.STARTING)
        fw = core.frameworks.get(t.framework_id)
        owner = fw.spec.principal if fw is not None else ""
        return Where(t.framework_id, t.task_id, t.agent_id, t.state.terminal, starting, owner)

    return await rt.query(run)


async def located_for(
    rt: MasterRuntime, caller: Principal, framework_id: str, task_id: str
) -> Where:
    """Rules 1 and 3."""
    try:
        where = await locate(rt, framework_id, task_id)
    except CallRejected:
        denial = owner_denial(rt.acl, caller, "ReadTaskFile", None)
        if denial is None:
            raise  # granted: NOT_FOUND and the like, as they are
    else:
        denial = owner_denial(rt.acl, caller, "ReadTaskFile", where.owner)
        if denial is None:
            return where
    refused = Denied(denial, caller.name)
    audit.deny(rt, refused, rt.stimulus("denied"))
    raise refused


async def chunks(
    rt: MasterRuntime,
    caller: Principal,
    framework_id: str,
    task_id: str,
    path: str = "",
    offset: int = 0,
    tail_lines: int = 0,
    follow: bool = False,
) -> AsyncIterator[tuple[Where, int, bytes]]:
    """(where, offset, data) for each chunk read (rule 2) for ``caller`` (rule 3);
    CallRejected on a refusal."""
    path = check_path(path)
    if not 0 <= tail_lines <= MAX_TAIL_LINES:
        raise CallRejected(
            Refusal.INVALID_ARGUMENT, f"tail_lines must be 0 to {MAX_TAIL_LINES}, got {tail_lines}"
        )
    where = await located_for(rt, caller, framework_id, task_id)
    request = agent_pb2.ReadSandboxFile(
        framework_id=where.framework_id,
        task_id=where.task_id,
        path=path,
        offset=-1 if tail_lines else max(0, offset),
        tail_lines=tail_lines,
        max_bytes=CHUNK_BYTES,
    )
    last_look = False
    while True:
        chunk = await rt.sandbox.read(where.agent_id, request)
        if chunk.error == agent_pb2.SANDBOX_READ_ERROR_NOT_FOUND and where.starting:
            if not follow:
                raise CallRejected(
                    Refusal.NOT_FOUND,
                    f"task {where.task_id} has not started on agent {where.agent_id} yet: "
                    "it has no sandbox",
                )
            await asyncio.sleep(POLL_SECONDS)  # its sandbox is about to be made
            where = await locate(rt, where.framework_id, where.task_id)
            continue
        if chunk.error:
            rt.metrics.task_file_reads.labels(_ERRORS[chunk.error].value).inc()
            raise CallRejected(_ERRORS[chunk.error], _refusal(where, path, chunk.message))
        rt.metrics.task_file_reads.labels("OK").inc()
        if chunk.data:
            yield where, chunk.offset, chunk.data
        request.offset = chunk.offset + len(chunk.data)
        request.tail_lines = 0
        if len(chunk.data) >= CHUNK_BYTES or request.offset < chunk.size:
            continue  # more is there now
        if not follow or last_look:
            return
        where = await locate(rt, where.framework_id, where.task_id)
        if where.ended:
            last_look = True  # what it wrote before it ended, then the end
        else:
            await asyncio.sleep(POLL_SECONDS)


def _refusal(where: Where, path: str, message: str) -> str:
    what = f"{path} of task {where.task_id} (framework {where.framework_id}) on agent "
    return f"{what}{where.agent_id}: {message}"
