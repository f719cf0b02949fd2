"""The registry's own faults on a real `corral master` process and a real SQLite file (issue
#30, item 9): a registry that vanished while the master was stopped stops the next start with
one line naming the file and the way on; a full disk stops the master with its real cause in
the log; a work dir that exists is made owner-only."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import stat
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from corral.frameworks.sdk.testing import LocalCluster
from corral.v1 import common_pb2 as pb
from corral.v1 import operator_pb2, operator_pb2_grpc
from tests.integration.test_bad_input import RawFramework, task

pytestmark = pytest.mark.e2e

CORRAL = (sys.executable, "-m", "corral.cli.main")


class Master:
    """One `corral master` process on free ports, its output in a file."""

    def __init__(self, work: Path, log: Path, *flags: str) -> None:
        self.work, self.log_path, self.flags = work, log, flags
        self.ready = log.with_suffix(".ready.json")
        self.proc: asyncio.subprocess.Process | None = None
        self.grpc = ""

    async def start(self) -> None:
        self.ready.unlink(missing_ok=True)
        with self.log_path.open("ab") as out:
            self.proc = await asyncio.create_subprocess_exec(
                *CORRAL,
                "master",
                *("--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", "--log-json"),
                *("--work-dir", str(self.work), "--ready-file", str(self.ready)),
                *self.flags,
                stdout=out,
                stderr=out,
                start_new_session=True,
            )

    async def serving(self, timeout: float = 60) -> None:
        async with asyncio.timeout(timeout):
            while not self.ready.exists():
                assert self.proc is not None and self.proc.returncode is None, self.output()
                await asyncio.sleep(0.05)
        self.grpc = json.loads(self.ready.read_text())["grpc"]

    async def exited(self, timeout: float = 60) -> int:
        assert self.proc is not None
        try:
            async with asyncio.timeout(timeout):
                return await self.proc.wait()
        except TimeoutError:
            raise AssertionError(
                f"the master still runs after {timeout}s:\n{self.output()}"
            ) from None

    async def stop(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, 15)
            try:
                async with asyncio.timeout(30):
                    await self.proc.wait()
            except TimeoutError:
                os.killpg(self.proc.pid, 9)
                await self.proc.wait()

    def output(self) -> str:
        return self.log_path.read_text() if self.log_path.exists() else ""


@contextlib.asynccontextmanager
async def master(work: Path, log: Path, *flags: str) -> AsyncIterator[Master]:
    m = Master(work, log, *flags)
    try:
        yield m
    finally:
        await m.stop()


async def cli(*args: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        *CORRAL, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    return proc.returncode or 0, out.decode()


async def test_a_registry_emptied_while_the_master_was_stopped_stops_the_next_start(
    tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    work.mkdir(mode=0o755)
    os.chmod(work, 0o755)  # made by hand, readable by all: the master makes it owner-only
    async with master(work, tmp_path / "first.log") as m:
        await m.start()
        await m.serving()
        assert stat.S_IMODE(os.stat(work).st_mode) == 0o700
        code, out = await cli("set", "weight", "web", "3", "--master", m.grpc)
        assert code == 0, out
    db = work / "registry.db"
    db.write_bytes(b"")  # truncated while the master was stopped
    async with master(work, tmp_path / "second.log") as m:
        await m.start()
        assert await m.exited() == 1
        lines = [line for line in m.output().splitlines() if line.strip()]
        assert len(lines) == 1, m.output()
        assert str(db) in lines[0] and "empty (0 bytes)" in lines[0]
        assert "--accept-empty-registry" in lines[0] and "Traceback" not in m.output()
    assert db.stat().st_size == 0  # the refusal touched nothing
    async with master(work, tmp_path / "third.log", "--accept-empty-registry") as m:
        await m.start()
        await m.serving()
        code, out = await cli("get", "roles", "-o", "json", "--master", m.grpc)
        assert code == 0, out
        assert "web" not in out  # an empty cluster, as the operator accepted
        logged = [json.loads(line) for line in m.output().splitlines() if line.startswith("{")]
        [lost] = [e for e in logged if e["event"] == "registry_lost_started_empty"]
        assert lost["level"] == "warning" and str(db) in lost["registry"]


@contextlib.contextmanager
def small_tmpfs(where: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` at ``where``, unmounted afterwards; skips where mount is refused."""
    where.mkdir()
    result = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(where)],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        where.rmdir()
        pytest.skip(
            "a full disk needs a small file system of its own: mounting a tmpfs was refused "
            f"({result.stderr.strip() or result.returncode}; it needs root, CAP_SYS_ADMIN). "
            "tests/unit/test_registry_faults.py covers the message with SQLite's size limit"
        )
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)
        where.rmdir()


def fill(directory: Path) -> None:
    """Write until the file system says ENOSPC."""
    fd = os.open(directory / "filler", os.O_CREAT | os.O_WRONLY, 0o600)
    try:
        with contextlib.suppress(OSError):
            while True:
                os.write(fd, b"\0" * 4096)
    finally:
        os.close(fd)


async def test_a_full_disk_stops_the_master_with_its_real_cause_in_the_log(
    tmp_path: Path,
) -> None:
    with small_tmpfs(tmp_path / "disk", "2m") as disk:
        async with master(disk / "work", tmp_path / "master.log") as m:
            await m.start()
            await m.serving()
            fill(disk)
            # Each new role is a registry write: the first that cannot grow the file stops it.
            for i in range(200):
                code, out = await cli(
                    "set", "weight", f"role-{uuid.uuid4().hex}-{i}", "2", "--master", m.grpc
                )
                if code != 0:
                    break
            assert code != 0, out  # refused UNAVAILABLE, or no answer: the master stopped
            assert await m.exited() == 1
            logged = [json.loads(line) for line in m.output().splitlines() if line.startswith("{")]
            [failed] = [e for e in logged if e["event"] == "registry_write_failed"]
            assert "database or disk is full" in failed["error"], failed
            assert "SQLITE_FULL" in failed["error"] and "ENOSPC" in failed["error"]
            assert "rollback" not in failed["error"]


async def test_tasks_keep_running_through_a_lost_registry_accepted_as_empty(
    tmp_path: Path,
) -> None:
    async with LocalCluster(
        agents=1, work_dir=tmp_path, master_args=("--allocation-interval", "0.2")
    ) as cluster:
        async with cluster.channel() as channel:
            fw = RawFramework(channel)
            await fw.subscribe()
            offer = await fw.next_offer()
            await fw.accept([offer.id], task("survivor", command="sleep 120"))
            await until_task(cluster, pb.TASK_STATE_RUNNING)
            await fw.close()
        await cluster.kill("master")
        (cluster.work_dir / "master" / "registry.db").write_bytes(b"")
        cluster.master_args = (*cluster.master_args, "--accept-empty-registry")
        await cluster.restart_master(kill=False)
        await cluster.wait_for_agents(1, 60)
        # The agent came back with its id and its task, and the task was taken in, not killed.
        await until_task(cluster, pb.TASK_STATE_RUNNING)
        state = await cluster.state()
        assert [t.info.task_id for t in state.tasks] == ["survivor"]
        async with cluster.channel() as channel:
            stub = operator_pb2_grpc.OperatorStub(channel)  # type: ignore[no-untyped-call]
            events = await stub.GetEvents(operator_pb2.GetEventsRequest(), timeout=10)
        assert not [e for e in events.events if e.reason == "TaskRefused"]


async def until_task(cluster: LocalCluster, state: int, timeout: float = 30) -> None:
    async with asyncio.timeout(timeout):
        while True:
            tasks = (await cluster.state()).tasks
            if tasks and all(t.status.state == state for t in tasks):
                return
            await asyncio.sleep(0.1)
