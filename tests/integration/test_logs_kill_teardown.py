"""`corral logs`, `corral kill` and `corral teardown` on a real master, real agents and real task
processes (issue #32): a task's output read through the master (the agents listen on no port),
followed until the task ends, after it ended, and a clear refusal once its sandbox is gone or a
path leads out of it; kills and teardowns answered, counted, and recorded naming who asked:
the principal of its certificate (TLS, the default), or the name it declares to a plain-text
master."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest

from corral.frameworks import sdk
from corral.frameworks.sdk.testing import LocalCluster
from corral.v1 import common_pb2 as pb
from tests.integration.corral_cli import corral
from tests.integration.keeper import Keeper, until
from tests.integration.operators import issue_operator
from tests.master_http import master_session

pytestmark = pytest.mark.e2e


async def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(corral, *args, timeout=60)


async def test_logs_of_a_real_task_running_followed_ended_and_gone(tmp_path: Path) -> None:
    async with LocalCluster(
        agents=1, work_dir=tmp_path, master_args=("--allocation-interval", "0.2")
    ) as cluster:
        keeper = Keeper(count=1)
        async with sdk.Driver(keeper, sdk.FrameworkInfo(name="keeper"), cluster.master) as d:
            await until("a task running", lambda: keeper.running, 30)
            (task_id,) = keeper.running
            m = ("--master", cluster.master)

            # Its output so far, then its last line, then its stderr: read through the master.
            await until(
                "a few ticks in its stdout",
                lambda: "tick 3" in corral("logs", task_id, *m).stdout,
                20,
            )
            out = (await cli("logs", task_id, *m)).stdout
            assert out.startswith(f"hello from {task_id}\ntick 0\n")
            tail = await cli("logs", task_id, "--tail", "1", *m)
            assert tail.returncode == 0 and len(tail.stdout.splitlines()) == 1
            assert tail.stdout.startswith("tick ")
            err = await cli("logs", task_id, "--stderr", *m)
            assert err.stdout == "to stderr\n"

            # Over HTTP too, and a path that leads out of the sandbox is refused.
            async with master_session(cluster) as http:
                base = cluster.url(f"/api/v1/tasks/{task_id}/files")
                async with http.get(f"{base}/stdout") as r:
                    assert r.status == 200 and (await r.read()).startswith(b"hello from")
                async with http.get(f"{base}/..%2F..%2F..%2Fagent_id") as r:
                    assert r.status == 400, await r.text()
                async with http.get(f"{base}/stdout?tail=x") as r:
                    assert r.status == 400 and "tail" in (await r.json())["error"]
            escape = await cli("logs", task_id, "--file", "../../../agent_id", *m)
            assert escape.returncode == 1 and "inside the task's sandbox" in escape.stderr

            # -f follows what it writes, and ends by itself once the task has ended.
            follow = subprocess.Popen(
                [sys.executable, "-m", "corral.cli.main", "logs", task_id, "-f", *m],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            try:
                assert follow.stdout is not None
                first = await asyncio.to_thread(follow.stdout.readline)
                assert first == f"hello from {task_id}\n"
                killed = await cli("kill", task_id, *m)
                assert killed.returncode == 0, killed.stderr
                # Read on through the same buffered reader: readline above may have taken
                # more than its line from the pipe (communicate() would skip that part).
                rest = await asyncio.wait_for(asyncio.to_thread(follow.stdout.read), 30)
                follow.wait(timeout=10)
                assert follow.stderr is not None
                assert follow.returncode == 0, follow.stderr.read()
                ticks = [line for line in rest.splitlines() if line.startswith("tick")]
                assert len(ticks) >= 3, rest[-200:]
            finally:
                if follow.poll() is None:
                    follow.kill()
                follow.communicate(timeout=10)  # and closes its pipes

            # The ended task's output is still there...
            await until("the kill's status", lambda: task_id in keeper.ended, 20)
            ended = await cli("logs", task_id, *m)
            assert ended.returncode == 0 and ended.stdout.startswith("hello from")
            # ... until its sandbox is removed: then it says so.
            sandboxes = cluster.work_dir / "agent-0" / "sandboxes"
            for fw_dir in sandboxes.iterdir():
                for box in fw_dir.iterdir():
                    if box.name.startswith(task_id):
                        shutil.rmtree(box)
            gone = await cli("logs", task_id, *m)
            assert gone.returncode == 1 and "sandbox is gone" in gone.stderr, gone.stderr
            unknown = await cli("logs", "no-such-task", *m)
            assert unknown.returncode == 1 and "no task" in unknown.stderr
            await d.teardown()


async def test_kill_and_teardown_are_answered_counted_and_recorded(tmp_path: Path) -> None:
    async with LocalCluster(
        agents=1, work_dir=tmp_path, master_args=("--allocation-interval", "0.2")
    ) as cluster:
        # Three operators with certificates of their own: an action names the principal of the
        # certificate it came with, whatever name its caller declares (mallory, below).
        alice, bob, carol = (
            issue_operator(name, tmp_path / "operators") for name in ("alice", "bob", "carol")
        )
        keeper = Keeper(count=2)
        other = Keeper(count=1, demand="other")
        m = ("--master", cluster.master)
        async with (
            sdk.Driver(keeper, sdk.FrameworkInfo(name="keeper"), cluster.master) as d,
            sdk.Driver(other, sdk.FrameworkInfo(name="other"), cluster.master) as d2,
        ):
            await until("two tasks running", lambda: len(keeper.running) == 2, 30)
            await until("the other framework's task", lambda: other.running, 30)
            victim = sorted(keeper.running)[0]

            as_alice = ("--tls-dir", str(alice), "--as", "mallory")
            done = await cli("kill", victim, "--grace", "0.5", *as_alice, *m)
            assert done.returncode == 0, done.stderr
            assert "--as mallory is ignored: over TLS" in done.stderr, done.stderr
            assert f"task {victim} (framework {d.framework_id}" in done.stdout
            assert done.stdout.rstrip().endswith(": killing")
            await until("the victim's KILLED", lambda: victim in keeper.ended, 20)
            status = keeper.ended[victim]
            assert status.state == pb.TASK_STATE_KILLED
            assert status.reason == pb.TASK_REASON_KILLED_BY_OPERATOR
            assert status.message.startswith("killed by operator alice at 127.0.0.1:"), status
            assert "mallory" not in status.message
            # The keeper replaces it, as a framework does.
            await until("a replacement", lambda: len(keeper.running) == 2, 30)

            # Bad input: an unknown task kills nothing, a negative grace is a usage error.
            unknown = await cli("kill", victim + "-nope", sorted(keeper.running)[0], *m)
            assert unknown.returncode == 1 and "no task" in unknown.stderr
            assert len(keeper.running) == 2
            assert (await cli("kill", victim, "--grace", "-1", *m)).returncode == 2
            again = await cli("kill", victim, *m)
            assert again.returncode == 0 and "already KILLED" in again.stdout

            # Teardown over HTTPS with bob's certificate (a declared name in the header does
            # not count against it).
            bob_tls = aiohttp.TCPConnector(ssl=sdk.TLS.from_dir(bob).ssl_context())
            async with aiohttp.ClientSession(connector=bob_tls) as http:
                url = cluster.url(f"/api/v1/frameworks/{d2.framework_id}/teardown")
                async with http.post(url, headers={"X-Corral-Operator": "mallory"}) as r:
                    assert r.status == 200, await r.text()
                    assert (await r.json()) == {"tasks_killed": 1}
                async with http.post(url) as r:
                    assert r.status == 409  # already removed
                async with http.post(cluster.url("/api/v1/tasks/kill"), data=b"{") as r:
                    assert r.status == 400 and "not JSON" in (await r.json())["error"]

            # Teardown through the CLI, as carol.
            td = await cli("teardown", d.framework_id, "--tls-dir", str(carol), *m)
            assert td.returncode == 0 and "torn down: 2 tasks killed" in td.stdout, td.stderr
            assert (await cli("teardown", "no-such-framework", *m)).returncode == 1

        events = (await cli("events", "-o", "json", *m)).stdout
        assert '"reason": "KillRequested"' in events and "operator alice at 127.0.0.1:" in events
        # The task's own TaskKilled event names why and who (issue #40: it was empty).
        (killed,) = [
            e for e in json.loads(events) if e["reason"] == "TaskKilled" and e["subject"] == victim
        ]
        assert "KILLED_BY_OPERATOR: killed by operator alice at 127.0.0.1:" in killed["message"]
        assert "teardown requested by operator bob at 127.0.0.1:" in events
        assert "teardown requested by operator carol at 127.0.0.1:" in events
        assert "mallory" not in events and "(declared)" not in events
        async with master_session(cluster) as http, http.get(cluster.url("/metrics")) as r:
            metrics = await r.text()
        assert 'corral_operator_actions_total{action="KillTasks",outcome="OK"} 2.0' in metrics
        assert (
            'corral_operator_actions_total{action="KillTasks",outcome="NOT_FOUND"} 1.0' in metrics
        )
        assert (
            'corral_operator_actions_total{action="TeardownFramework",outcome="OK"} 2.0' in metrics
        )


async def test_a_plain_text_master_records_the_name_an_operator_declares(
    tmp_path: Path,
) -> None:
    """With --insecure on both sides there is no certificate: the master records the name the
    caller declares (`--as`, the X-Corral-Operator header) and says it is only declared."""
    async with LocalCluster(
        agents=1, work_dir=tmp_path, insecure=True, master_args=("--allocation-interval", "0.2")
    ) as cluster:
        keeper = Keeper(count=1)
        m = ("--master", cluster.master, "--insecure")
        info = sdk.FrameworkInfo(name="keeper")
        async with sdk.Driver(keeper, info, cluster.master, tls=cluster.tls) as d:
            await until("a task running", lambda: keeper.running, 30)
            (task_id,) = keeper.running
            killed = await cli("kill", task_id, "--as", "alice", *m)
            assert killed.returncode == 0, killed.stderr
            await until("the kill's status", lambda: task_id in keeper.ended, 20)
            message = keeper.ended[task_id].message
            assert message.startswith("killed by operator alice (declared) at 127.0.0.1:"), message
            async with master_session(cluster) as http:
                url = cluster.url(f"/api/v1/frameworks/{d.framework_id}/teardown")
                assert url.startswith("http://")
                async with http.post(url, headers={"X-Corral-Operator": "bob"}) as r:
                    assert r.status == 200, await r.text()
        events = (await cli("events", "-o", "json", *m)).stdout
        assert "operator alice (declared) at 127.0.0.1:" in events
        assert "teardown requested by operator bob (declared) at 127.0.0.1:" in events
