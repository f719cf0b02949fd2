"""The tutorial framework end to end: a real `corral master` and a real `corral agent` as
subprocesses on 127.0.0.1, real `sh -c` tasks, the exact code shown in docs/sdk.md."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator

import pytest

from corral.frameworks import sdk
from corral.frameworks.examples import hello
from corral.frameworks.sdk.testing import LocalCluster, free_port

CORRAL = (sys.executable, "-m", "corral.cli.main")
TIMEOUT = 60.0


@pytest.fixture
async def cluster() -> AsyncIterator[LocalCluster]:
    async with LocalCluster(agents=1, corral=CORRAL) as c:
        yield c


async def run_corral(*args: str, timeout: float = TIMEOUT) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        *CORRAL, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise AssertionError(f"corral {' '.join(args)} did not end within {timeout:g} s") from None
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_the_docs_example_runs_all_tasks_to_finished(
    cluster: LocalCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    code = await asyncio.wait_for(hello.main(cluster.master, tasks=6), TIMEOUT)
    out = capsys.readouterr().out
    assert code == 0, f"{out}\n{cluster.logs()}"
    assert "6 of 6 tasks finished" in out
    assert out.count(": FINISHED") == 6
    # The master agrees: six tasks of the hello framework, all FINISHED.
    state = await cluster.state()
    hello_tasks = [t for t in state.tasks if t.info.name.startswith("hello-")]
    assert sorted(sdk.state_name(t.status.state) for t in hello_tasks) == ["FINISHED"] * 6
    # And each task really ran: its sandbox holds what `echo` printed, with its own id.
    # Sandboxes only (agent/executor_process.py): a walk of the whole work dir also enters the
    # agent's task checkpoints, which it deletes as tasks' ends are acknowledged, and a folder
    # gone mid-walk failed the test.
    for t in hello_tasks:
        outputs = list(cluster.work_dir.glob(f"*/sandboxes/*/*{t.info.task_id}*/stdout"))
        assert outputs, f"no sandbox stdout for {t.info.task_id}"
        assert outputs[0].read_text().strip() == f"hello from {t.info.task_id}"


async def test_corral_run_hello_exits_0_when_all_tasks_finish(cluster: LocalCluster) -> None:
    code, out, err = await run_corral("run", "hello", "--master", cluster.master, "--tasks", "3")
    assert code == 0, f"{out}\n{err}\n{cluster.logs()}"
    assert "3 of 3 tasks finished" in out


async def test_corral_run_hello_without_a_master_is_one_line_and_exit_1() -> None:
    address = f"127.0.0.1:{free_port()}"
    code, _, err = await run_corral("run", "hello", "--master", address, "--connect-timeout", "1")
    assert code == 1
    assert err.strip() == (
        f"corral run hello: cannot reach the master at {address} within 1 s "
        "(is `corral master` running?)"
    )
    assert "Traceback" not in err
