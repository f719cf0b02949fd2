"""Maintenance on a real master, real agents and real task processes (issue #32): a cordoned
agent is offered to nobody while its tasks run on; `corral drain` kills an agent's tasks with a
reason its framework sees, the framework places them on another agent, and the drain ends when
none is left; maintenance survives a master restart; `corral delete agent` forgets an agent
that is gone and refuses one that is connected."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import pytest

from corral.frameworks import sdk
from corral.frameworks.sdk.testing import LocalCluster
from corral.v1 import common_pb2 as pb
from tests.integration.corral_cli import corral
from tests.integration.keeper import Keeper, until
from tests.integration.operators import issue_operator

pytestmark = pytest.mark.e2e


async def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(corral, *args, timeout=120)


async def agents_by_name(master: str) -> dict[str, dict[str, str]]:
    """`corral get agents` as {agent name: {column: cell}}."""
    done = await cli("get", "agents", "--master", master)
    assert done.returncode == 0, done.stderr
    header, *rows = [line.split() for line in done.stdout.splitlines()]
    return {row[1]: dict(zip(header, row, strict=False)) for row in rows}


async def test_cordon_and_drain_move_tasks_to_another_agent(tmp_path: Path) -> None:
    async with LocalCluster(
        agents=2,
        work_dir=tmp_path,
        master_args=("--allocation-interval", "0.2"),
        agent_attributes=("zone:a", "zone:b"),
    ) as cluster:
        m = ("--master", cluster.master)
        # Operator ops, with a certificate of its own: the principal actions are recorded with.
        ops = ("--tls-dir", str(issue_operator("ops", tmp_path / "operators")))
        agents = await agents_by_name(cluster.master)
        assert set(agents) == {"agent-0", "agent-1"}  # named after their work dirs
        first, second = agents["agent-0"]["ID"], agents["agent-1"]["ID"]
        assert agents["agent-0"]["ZONE"] == "a" and agents["agent-1"]["ZONE"] == "b"

        # Cordoned, agent-1 is offered to nobody: the framework's tasks all go to agent-0.
        cordon = await cli("cordon", second, *ops, *m)
        assert cordon.returncode == 0 and "cordoned" in cordon.stdout, cordon.stderr
        assert (await agents_by_name(cluster.master))["agent-1"]["STATE"] == "cordoned"
        keeper = Keeper(count=2)
        async with sdk.Driver(keeper, sdk.FrameworkInfo(name="keeper"), cluster.master):
            await until("two tasks running", lambda: len(keeper.running) == 2, 30)
            assert set(keeper.launched.values()) == {first}
            assert (await cli("uncordon", second, *m)).returncode == 0

            # Drain agent-0: its tasks are killed with a reason, and placed on agent-1.
            drain = await cli("drain", first, "--grace", "1", "--timeout", "60", *ops, *m)
            assert drain.returncode == 0, drain.stderr
            assert "draining: 2 tasks being killed" in drain.stdout
            assert drain.stdout.rstrip().endswith(f"agent {first} drained")
            for task_id in [t for t, a in keeper.launched.items() if a == first]:
                status = keeper.ended[task_id]
                assert status.reason == pb.TASK_REASON_AGENT_DRAINING, status
                assert "drained for maintenance by operator ops at 127.0.0.1:" in status.message
            await until("two tasks on agent-1", lambda: len(keeper.running_on(second)) == 2, 30)
            assert not keeper.running_on(first)
            shown = await agents_by_name(cluster.master)
            assert shown["agent-0"]["STATE"] == "drained" and shown["agent-1"]["STATE"] == "active"

            # The drain is durable: a restarted master keeps agent-0 out of offers.
            await cluster.restart_master()
            await cluster.wait_for_agents(2, 60)
            await until(
                "agent-0 to come back drained",
                lambda: '"draining"' in corral("describe", "agent", first, "-o", "json", *m).stdout,
                30,
            )
            described = json.loads((await cli("describe", "agent", first, "-o", "json", *m)).stdout)
            assert described["object"]["maintenance"]["requested_by"].startswith("operator ops at ")
            kinds = [e["kind"] for e in described["events"]]
            assert "agent_reregistered" in kinds
            assert len(keeper.launched) == 4  # nothing placed on agent-0 since
            uncordon = await cli("uncordon", first, *m)
            assert uncordon.returncode == 0, uncordon.stderr

            # A drain that cannot finish in time says what is left (the agent is gone).
            cluster.pause("agent-1")
            stuck = await cli("drain", second, "--timeout", "2", *m)
            assert stuck.returncode == 1 and "still has 2 tasks" in stuck.stderr, stuck.stderr
            cluster.resume("agent-1")

        # Delete: refused while connected; a gone agent is forgotten.
        refused = await cli("delete", "agent", second, *m)
        assert refused.returncode == 1 and "is connected" in refused.stderr
        await cluster.kill("agent-1")
        await until(
            "agent-1 disconnected",
            lambda: (
                (state := corral("describe", "agent", second, "-o", "json", *m).stdout)
                and not json.loads(state)["object"]["connected"]
            ),
            30,
        )
        deleted = await cli("delete", "agent", second, *ops, *m)
        assert deleted.returncode == 0 and "deleted" in deleted.stdout, deleted.stderr
        assert "agent-1" not in await agents_by_name(cluster.master)
        assert (await cli("delete", "agent", second, *m)).returncode == 1
        events = (await cli("events", "--reason", "AgentDeleted", *m)).stdout
        assert "deleted by operator ops at 127.0.0.1:" in events
        # Its state as `corral get agents` showed it, not "active" (issue #40).
        assert "(disconnected,drained): deleted by" in events, events
