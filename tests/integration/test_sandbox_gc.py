"""A real agent removes ended tasks' sandboxes after `--sandbox-gc-delay` (Mesos' --gc_delay),
never a running task's however old its last write, and `corral logs` then says the sandbox is
gone."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from corral.frameworks import sdk
from corral.frameworks.sdk.testing import LocalCluster
from tests.integration.corral_cli import corral
from tests.integration.keeper import Keeper, until

pytestmark = pytest.mark.e2e

AGENT = ("--sandbox-gc-delay", "1", "--disk-watch-interval", "0.2")


def _sandbox(root: Path, task_id: str) -> Path | None:
    found = sorted(root.glob(f"*/{task_id}"))
    return found[0] if found else None


async def test_an_ended_tasks_sandbox_goes_and_a_running_ones_stays(tmp_path: Path) -> None:
    async with LocalCluster(
        agents=1,
        work_dir=tmp_path,
        master_args=("--allocation-interval", "0.2"),
        agent_args=AGENT,
    ) as cluster:
        sandboxes = cluster.work_dir / "agent-0" / "sandboxes"
        # Writes once, then runs quietly: its last write only gets older.
        quiet = Keeper(count=1, command='echo "started"; exec sleep 600', demand="quiet")
        async with sdk.Driver(quiet, sdk.FrameworkInfo(name="quiet"), cluster.master):
            await until("the quiet task running", lambda: quiet.running, 30)
            (running,) = quiet.running
            kept = _sandbox(sandboxes, running)
            assert kept is not None and (kept / "stdout").read_text() == "started\n"
            # Started after it, so it last wrote later: once this one's sandbox is collected,
            # the running one's was as old and older, and is kept only for being in use.
            brief = Keeper(count=1, command='echo "done"', demand="brief")
            async with sdk.Driver(brief, sdk.FrameworkInfo(name="brief"), cluster.master):
                await until("a brief task ended", lambda: brief.ended, 30)
                first = min(brief.ended, key=lambda t: int(t.rsplit("-", 1)[1]))
                await until(
                    f"the sandbox of ended task {first} removed",
                    lambda: _sandbox(sandboxes, first) is None,
                    30,
                )
                assert kept.is_dir() and (kept / "stdout").read_text() == "started\n"
                gone = await asyncio.to_thread(corral, "logs", first, "--master", cluster.master)
                assert gone.returncode == 1 and "sandbox is gone" in gone.stderr, gone.stderr
                alive = await asyncio.to_thread(corral, "logs", running, "--master", cluster.master)
                assert alive.returncode == 0 and alive.stdout == "started\n", alive.stderr


def test_bad_collection_flags_are_refused_with_one_line(tmp_path: Path) -> None:
    for flags, message in (
        (("--sandbox-gc-delay", "-1"), "--sandbox-gc-delay must be a number >= 0"),
        (("--sandbox-gc-headroom", "1.5"), "--sandbox-gc-headroom must be a fraction in [0, 1]"),
        (("--disk-watch-interval", "0"), "--disk-watch-interval must be a number > 0"),
    ):
        done = corral("agent", "--insecure", "--work-dir", str(tmp_path), *flags)
        assert done.returncode == 2 and message in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
