"""`corral describe`, `corral get --watch` and named contexts on a real master, real agents and
real task processes (issue #32): describe shows one object with its recent events, a watch
prints each change as it happens, and the master is set once (CORRAL_MASTER, a context)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import grpc
import pytest

from corral.frameworks import sdk
from corral.frameworks.sdk.testing import LocalCluster
from corral.v1 import operator_pb2 as op
from corral.v1 import operator_pb2_grpc as op_grpc
from tests.integration.corral_cli import corral
from tests.integration.keeper import Keeper, until

pytestmark = pytest.mark.e2e


async def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(corral, *args, timeout=60)


def _run_env(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "corral.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, **env},
    )


async def test_describe_and_watch(tmp_path: Path) -> None:
    async with LocalCluster(
        agents=1,
        work_dir=tmp_path,
        master_args=("--allocation-interval", "0.2"),
        agent_attributes=("zone:a",),
    ) as cluster:
        m = ("--master", cluster.master)
        keeper = Keeper(count=1)
        async with sdk.Driver(keeper, sdk.FrameworkInfo(name="keeper"), cluster.master) as d:
            await until("a task running", lambda: keeper.running, 30)
            (task_id,) = keeper.running
            agent_id = keeper.launched[task_id]

            text = (await cli("describe", "task", task_id, *m)).stdout
            assert "Name:" in text and task_id in text and "RUNNING" in text
            assert f"{agent_id} (" in text and "zone a" in text
            assert f"corral logs {task_id}" in text

            agent = await cli("describe", "agent", agent_id, *m)
            assert agent.returncode == 0, agent.stderr
            assert "State:" in agent.stdout and "active" in agent.stdout
            assert "AgentAdded" in agent.stdout  # its events
            assert task_id in agent.stdout  # its tasks

            fw = (await cli("describe", "framework", d.framework_id, *m)).stdout
            assert "keeper" in fw and "svc: 1/1" in fw and "FrameworkAdded" in fw
            role = (await cli("describe", "role", "*", *m)).stdout
            assert d.framework_id in role

            as_json = json.loads((await cli("describe", "task", task_id, "-o", "json", *m)).stdout)
            assert as_json["object"]["id"] == task_id and as_json["kind"] == "task"
            state = json.loads((await cli("get", "tasks", "-o", "json", *m)).stdout)
            listed = next(t for t in state if t["id"] == task_id)
            # The same shape, field for field; measured usage moves between the two reads.
            assert as_json["object"].keys() == listed.keys()
            assert {**as_json["object"], "usage": None} == {**listed, "usage": None}

            missing = await cli("describe", "agent", "nope", *m)
            assert missing.returncode == 1 and "no agent 'nope'" in missing.stderr

            # A watch prints the table, then each change: a kill and its replacement.
            watch = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "corral.cli.main",
                    "get",
                    "tasks",
                    "--watch",
                    "-o",
                    "json",
                    *m,
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            try:
                assert watch.stdout is not None
                first = json.loads(await asyncio.to_thread(watch.stdout.readline))
                assert first["id"] == task_id and first["state"] == "RUNNING"
                assert (await cli("kill", task_id, *m)).returncode == 0
                seen: dict[str, set[str]] = {}
                while not (
                    "KILLED" in seen.get(task_id, set())
                    and any("RUNNING" in s for t, s in seen.items() if t != task_id)
                ):
                    line = await asyncio.wait_for(asyncio.to_thread(watch.stdout.readline), 30)
                    assert line, watch.stderr.read() if watch.stderr else "the watch ended"
                    record = json.loads(line)
                    seen.setdefault(record["id"], set()).add(record["state"])
            finally:
                watch.terminate()
                watch.communicate(timeout=10)  # reaped, and its pipes closed
            await d.teardown()


async def test_describe_agent_takes_the_name_get_agents_prints(tmp_path: Path) -> None:
    """Issue #40: `describe agent NAME` takes the NAME column (or a hostname), as kubectl takes
    a node's name; a name several agents share is refused naming their ids."""
    async with LocalCluster(agents=2, work_dir=tmp_path, agent_args=("--simulate",)) as cluster:
        m = ("--master", cluster.master)
        listed = await cli("get", "agents", "-o", "json", *m)
        agents = {a["name"]: a for a in json.loads(listed.stdout)}
        first = agents["agent-0"]
        by_name = await cli("describe", "agent", "agent-0", "-o", "json", *m)
        assert by_name.returncode == 0, by_name.stderr
        described = json.loads(by_name.stdout)
        assert described["object"]["id"] == first["id"]
        assert "AgentAdded" in [e["reason"] for e in described["events"]]  # by its id
        table = await cli("describe", "agent", "agent-0", *m)
        assert table.returncode == 0 and first["id"] in table.stdout, table.stderr
        # Both agents of a test cluster run on this host: its hostname names two of them.
        assert {a["hostname"] for a in agents.values()} == {first["hostname"]}
        shared = await cli("describe", "agent", first["hostname"], *m)
        assert shared.returncode == 2, shared
        assert f"2 agents are named {first['hostname']!r}" in shared.stderr
        assert all(a["id"] in shared.stderr for a in agents.values())
        assert "Traceback" not in shared.stderr
        missing = await cli("describe", "agent", "nope", *m)
        assert missing.returncode == 1 and "no agent 'nope'" in missing.stderr
        empty = await cli("describe", "agent", "", *m)
        assert empty.returncode == 2 and "describe agent: the ID is empty" in empty.stderr

        # What describe asks for over gRPC: the agent's part of the state, not the cluster's
        # (master/state_scope.py); a scope naming nothing is refused with its reason.
        async with cluster.channel() as channel:
            operator = op_grpc.OperatorStub(channel)  # type: ignore[no-untyped-call]
            scoped = await operator.GetState(op.GetStateRequest(agent="agent-0"), timeout=10)
            assert [a.info.id for a in scoped.agents] == [first["id"]]
            whole = await operator.GetState(op.GetStateRequest(), timeout=10)
            assert len(whole.agents) == 2
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await operator.GetState(op.GetStateRequest(agent=""), timeout=10)
            assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "scope agent is empty" in (refused.value.details() or "")


# A task whose memory use moves by a MiB every 0.2 s (up to 12 MiB more, then back), well
# under the Keeper's 32 MiB limit: a measurement that changes while nothing else does.
BREATHING = (
    "python3 -c 'import time\n"
    "while True:\n"
    "    held = []\n"
    "    for _ in range(12):\n"
    '        held.append(b"x" * (1 << 20)); time.sleep(0.2)\''
)


async def test_watch_prints_a_task_again_for_its_state_not_its_memory(tmp_path: Path) -> None:
    """Issue #40: a watch re-printed a running task each time its memory use moved. Now it is
    printed once while its use moves (and the watch fetches the state again, on the cluster
    events an operator's cordons make), and again when it is killed."""
    async with LocalCluster(
        agents=1,
        work_dir=tmp_path,
        master_args=("--allocation-interval", "0.2"),
        agent_args=("--usage-interval", "0.2"),
    ) as cluster:
        m = ("--master", cluster.master)
        keeper = Keeper(count=1, command=BREATHING)
        async with sdk.Driver(keeper, sdk.FrameworkInfo(name="keeper"), cluster.master) as d:
            await until("a task running", lambda: keeper.running, 30)
            (task_id,) = keeper.running
            agent_id = keeper.launched[task_id]
            watch = subprocess.Popen(
                [sys.executable, "-m", "corral.cli.main", "get", "tasks", "-w", "-o", "json", *m],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            lines: list[dict[str, object]] = []

            def read_all() -> None:  # until the watch ends: what it printed, as it did
                assert watch.stdout is not None
                for line in watch.stdout:
                    lines.append(json.loads(line))

            reader = threading.Thread(target=read_all, daemon=True)
            reader.start()
            try:
                await until("the watch's first line", lambda: lines or not reader.is_alive(), 30)
                assert lines, watch.stderr.read() if watch.stderr else "the watch ended"
                first = lines[0]
                assert first["id"] == task_id and first["state"] == "RUNNING"
                # The task's measured use moves (the master's state says so) while the watch
                # fetches the state again after each cordon and uncordon (cluster events).
                seen_mem: set[float] = set()
                deadline = asyncio.get_running_loop().time() + 120
                async with cluster.channel() as channel:
                    operator = op_grpc.OperatorStub(channel)  # type: ignore[no-untyped-call]
                    while len(seen_mem) < 3:
                        assert asyncio.get_running_loop().time() < deadline, (
                            f"the task's measured memory took only {sorted(seen_mem)} in 120 s"
                        )
                        state = await cluster.state()
                        (entry,) = [t for t in state.tasks if t.info.task_id == task_id]
                        if entry.HasField("usage"):
                            seen_mem.add(round(entry.usage.mem))
                        await operator.Cordon(op.CordonRequest(agent_id=agent_id), timeout=10)
                        await operator.Uncordon(op.UncordonRequest(agent_id=agent_id), timeout=10)
                        await asyncio.sleep(0.7)  # past the watch's half-second gathering
                assert (await cli("kill", task_id, *m)).returncode == 0
                await until(
                    "the killed task printed by the watch",
                    lambda: any(r["id"] == task_id and r["state"] == "KILLED" for r in lines),
                    30,
                )
                ours = [r["state"] for r in lines if r["id"] == task_id]
                # Printed when it ran and when it was killed (KILLING between, if seen), never
                # again only because its memory use moved.
                assert ours[0] == "RUNNING" and ours[-1] == "KILLED", ours
                assert ours.count("RUNNING") == 1, (ours, sorted(seen_mem))
            finally:
                watch.terminate()
                watch.wait(timeout=10)
                reader.join(timeout=10)  # the pipe's end ends it
                assert watch.stderr is not None
                watch.stderr.close()
                assert watch.stdout is not None
                watch.stdout.close()
            await d.teardown()


async def test_the_master_is_set_once_by_env_or_context(tmp_path: Path) -> None:
    async with LocalCluster(agents=1, work_dir=tmp_path / "cluster") as cluster:
        config = tmp_path / "home" / "config.json"
        env = {"CORRAL_CONFIG": str(config), "CORRAL_MASTER": ""}
        # CORRAL_MASTER.
        by_env = _run_env({**env, "CORRAL_MASTER": cluster.master}, "get", "agents")
        assert by_env.returncode == 0 and "active" in by_env.stdout, by_env.stderr
        bad = _run_env({**env, "CORRAL_MASTER": "not a master"}, "get", "agents")
        assert bad.returncode == 2 and "CORRAL_MASTER" in bad.stderr
        # A named context, made current.
        made = _run_env(
            env, "config", "set-context", "lab", "--master", cluster.master, "--as", "eve"
        )
        assert made.returncode == 0, made.stderr
        assert (
            _run_env(env, "config", "set-context", "prod", "--master", "10.9.9.9:5050").returncode
            == 0
        )
        listed = _run_env(env, "config", "get-contexts").stdout
        assert "* " in listed and "lab" in listed and "prod" in listed
        assert _run_env(env, "config", "current-context").stdout.strip() == "lab"
        by_context = _run_env(env, "get", "agents")
        assert by_context.returncode == 0 and "active" in by_context.stdout, by_context.stderr
        # Over TLS the master records the certificate's principal (the operator credential the
        # master wrote, "admin"), not the name the context declares.
        (agent_id,) = _agent_ids(by_context.stdout)
        assert _run_env(env, "cordon", agent_id).returncode == 0
        events = _run_env(env, "events", "--reason", "AgentCordoned").stdout
        assert "cordoned by operator admin at 127.0.0.1:" in events, events
        assert "eve" not in events and "(declared)" not in events
        # use-context switches; a flag wins over the context.
        assert _run_env(env, "config", "use-context", "prod").returncode == 0
        assert _run_env(env, "get", "agents", "--master", cluster.master).returncode == 0
        assert _run_env(env, "config", "use-context", "nosuch").returncode == 2
        config.write_text("{not json")
        broken = _run_env(env, "get", "agents")
        assert broken.returncode == 2 and str(config) in broken.stderr


async def test_a_contexts_operator_name_is_declared_to_a_plain_text_master(
    tmp_path: Path,
) -> None:
    """With --insecure on both sides there is no certificate: the name a context declares (or
    --as, which wins over it) is the one the master records, marked as declared."""
    async with LocalCluster(agents=1, work_dir=tmp_path / "cluster", insecure=True) as cluster:
        env = {
            "CORRAL_CONFIG": str(tmp_path / "home" / "config.json"),
            "CORRAL_MASTER": "",
            "CORRAL_INSECURE": "1",
        }
        made = _run_env(
            env, "config", "set-context", "lab", "--master", cluster.master, "--as", "eve"
        )
        assert made.returncode == 0, made.stderr
        listed = _run_env(env, "get", "agents")
        assert listed.returncode == 0, listed.stderr
        (agent_id,) = _agent_ids(listed.stdout)
        assert _run_env(env, "cordon", agent_id).returncode == 0
        frank = _run_env(env, "uncordon", agent_id, "--as", "frank")
        assert frank.returncode == 0 and "ignored" not in frank.stderr, frank.stderr
        events = _run_env(env, "events").stdout
        assert "cordoned by operator eve (declared) at 127.0.0.1:" in events, events
        assert "uncordoned by operator frank (declared) at 127.0.0.1:" in events, events


def _agent_ids(table: str) -> list[str]:
    """The ID column of `corral get agents`."""
    return [line.split()[0] for line in table.splitlines()[1:] if line.strip()]
