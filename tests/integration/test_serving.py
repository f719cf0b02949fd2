"""The serving framework on a real master (docs/frameworks.md, "Serving"): it keeps its
instance count through a killed instance and a killed agent, spreads by max_skew (and leaves
pending what would break it), replaces an instance whose HTTP health check fails, and scales
when its app file changes."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from corral.frameworks import sdk
from corral.frameworks.sdk.testing import LocalCluster
from corral.frameworks.serving import run
from corral.frameworks.serving.app import AppSpec
from corral.frameworks.serving.scheduler import ServingScheduler

pytestmark = pytest.mark.e2e

CORRAL = (sys.executable, "-m", "corral.cli.main")
FAST = ("--allocation-interval", "0.2")


async def until(check: Callable[[], bool], timeout: float, what: str, logs: str = "") -> None:
    async def poll() -> None:
        while not check():
            await asyncio.sleep(0.05)

    try:
        await asyncio.wait_for(poll(), timeout)
    except TimeoutError:
        raise AssertionError(f"timed out after {timeout:g} s waiting for {what}\n{logs}") from None


class Running:
    """An app run in the background, stopped (and awaited) on exit."""

    def __init__(self, spec: AppSpec, master: str, **kwargs: Any) -> None:
        self.events: list[str] = []
        self.serving = ServingScheduler(spec, self.events.append)
        self.stop = asyncio.Event()
        self.task = asyncio.ensure_future(
            run.run_app(spec, master, stop=self.stop, scheduler=self.serving, **kwargs)
        )
        self.summary: dict[str, object] = {}

    async def __aenter__(self) -> Running:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.stop.set()
        self.summary = await asyncio.wait_for(self.task, 30)

    def live(self) -> set[str]:
        return {i.task_id for i in self.serving.app.live.values() if not i.killing}

    def running(self) -> int:
        return self.serving.counts().running


async def zones_of_live_tasks(cluster: LocalCluster) -> Counter[str]:
    state = await cluster.state()
    zone = {a.info.id: a.info.attributes.get("zone", "") for a in state.agents}
    return Counter(
        zone[t.status.agent_id or t.info.agent_id]
        for t in state.tasks
        if not sdk.is_terminal(t.status.state)
    )


def app(**fields: Any) -> AppSpec:
    return AppSpec.from_json({"id": "web", "command": "sleep 600", "cpus": 1, "mem": 64, **fields})


# -- spread ---------------------------------------------------------------------------------


async def test_max_skew_spreads_six_instances_two_per_zone(tmp_path: Path) -> None:
    async with LocalCluster(
        agents=3,
        agent_resources="cpus:4;mem:4096;disk:100",
        agent_attributes=["zone:a", {"zone": "b"}, "zone:c"],
        work_dir=tmp_path,
        master_args=FAST,
        agent_args=("--simulate",),
    ) as cluster:
        spec = app(instances=6, spread={"topology_key": "zone", "max_skew": 1})
        async with Running(spec, cluster.master) as r:
            await until(lambda: r.running() == 6, 30, "6 instances running", cluster.logs())
            assert await zones_of_live_tasks(cluster) == {"a": 2, "b": 2, "c": 2}


async def test_an_undersized_zone_leaves_instances_pending_unless_schedule_anyway(
    tmp_path: Path,
) -> None:
    async with LocalCluster(
        agents=0, work_dir=tmp_path, master_args=FAST, agent_args=("--simulate",)
    ) as cluster:
        for zone, cpus in (("a", 4), ("b", 4), ("c", 1)):
            await cluster.add_agent(
                f"agent-{zone}", f"cpus:{cpus};mem:4096;disk:100", attributes={"zone": zone}
            )
        await cluster.wait_for_agents(3, 30)
        spread = {"topology_key": "zone", "max_skew": 1, "when_unsatisfiable": "DoNotSchedule"}
        async with Running(app(instances=6, spread=spread), cluster.master) as r:
            await until(lambda: r.running() == 5, 30, "5 instances running", cluster.logs())
            # Zone c holds one: a third in a or b would be 3 against 1. The sixth stays pending
            # while the framework keeps being offered a and b (its demand is unmet) and declines.
            # A negative: watch ten allocation cycles, enough to have placed it if the
            # framework would.
            await cluster.wait_for_cycles(10, 30)
            assert r.serving.counts().pending == 1
            assert r.serving.app.launched == 5
            assert await zones_of_live_tasks(cluster) == {"a": 2, "b": 2, "c": 1}
        assert r.summary["pending"] == 1
        anyway = dict(spread, when_unsatisfiable="ScheduleAnyway")
        async with Running(app(instances=6, spread=anyway), cluster.master) as r:
            await until(
                lambda: r.running() == 6, 30, "6 instances with ScheduleAnyway", cluster.logs()
            )
            assert sorted((await zones_of_live_tasks(cluster)).values()) == [1, 2, 3]


# -- failures -------------------------------------------------------------------------------


async def test_a_killed_instance_is_replaced(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    pids.mkdir()
    command = f"echo $$ > {pids}/$CORRAL_TASK_ID; exec sleep 600"
    spec = app(command=command, instances=2, cpus=0.5, backoff={"initial": 0.2, "max": 1})
    async with LocalCluster(agents=1, work_dir=tmp_path / "cluster", master_args=FAST) as cluster:
        async with Running(spec, cluster.master) as r:
            await until(lambda: r.running() == 2, 30, "2 instances running", cluster.logs())
            first = r.live()
            victim = sorted(first)[0]
            await until(lambda: (pids / victim).exists(), 10, "the instance's pid file")
            os.kill(int((pids / victim).read_text()), signal.SIGKILL)
            await until(
                lambda: r.running() == 2 and victim not in r.live(),
                30,
                "a replacement",
                cluster.logs(),
            )
            assert len(r.live() - first) == 1
            assert r.serving.app.failures == 1
            assert any(victim in e and "FAILED" in e for e in r.events), r.events
        assert r.summary["launched"] == 3


async def test_instances_on_a_killed_agent_are_replaced_elsewhere(tmp_path: Path) -> None:
    master_args = (*FAST, "--agent-timeout", "1.5")
    async with LocalCluster(
        agents=0, work_dir=tmp_path, master_args=master_args, agent_args=("--simulate",)
    ) as cluster:
        for i in range(2):
            await cluster.add_agent(f"agent-{i}", "cpus:4;mem:4096;disk:100", hostname=f"host-{i}")
        await cluster.wait_for_agents(2, 30)
        spec = app(instances=4, backoff={"initial": 0.1, "max": 0.5})
        async with Running(spec, cluster.master) as r:
            await until(lambda: r.running() == 4, 30, "4 instances running", cluster.logs())
            hosts = Counter(i.host for i in r.serving.app.live.values())
            assert hosts == {"host-0": 2, "host-1": 2}  # emptiest agent first
            await cluster.kill("agent-0")
            await until(
                lambda: (
                    r.running() == 4 and {i.host for i in r.serving.app.live.values()} == {"host-1"}
                ),
                30,
                "4 instances on the agent left",
                cluster.logs(),
            )
            assert r.serving.app.failures == 2
            assert sum("LOST" in e for e in r.events) == 2, r.events


async def test_a_new_command_rolls_the_instances_keeping_all_healthy(tmp_path: Path) -> None:
    async with LocalCluster(
        agents=2, work_dir=tmp_path, master_args=FAST, agent_args=("--simulate",)
    ) as cluster:
        spec = app(instances=3)
        healthy_seen: list[int] = []
        async with Running(
            spec, cluster.master, on_status=lambda c: healthy_seen.append(c.healthy)
        ) as r:
            await until(lambda: r.serving.counts().healthy == 3, 30, "3 instances", cluster.logs())
            first = r.live()
            healthy_seen.clear()
            r.serving.update(dataclasses.replace(spec, command="sleep 601"))
            new = AppSpec.from_json({"id": "web", "command": "sleep 601", "cpus": 1, "mem": 64})
            await until(
                lambda: (
                    len(r.live()) == 3
                    and not r.live() & first
                    and all(i.version == new.version for i in r.serving.app.live.values())
                ),
                30,
                "3 instances of the new version and none of the old",
                cluster.logs(),
            )
            # minimum_health_capacity 1 (the default): never fewer than 3 healthy meanwhile.
            assert healthy_seen and min(healthy_seen) >= 3, healthy_seen
            assert sum("upgrade" in e for e in r.events if e.startswith("killing")) == 3


# -- health checks --------------------------------------------------------------------------


async def test_an_instance_whose_http_server_dies_is_killed_and_replaced(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    pids.mkdir()
    # The server runs beside the task's main process, so killing it leaves the task running:
    # only the health check can tell.
    command = (
        f"{sys.executable} -m http.server $PORT0 --bind 127.0.0.1 >/dev/null 2>&1 & "
        f"echo $! > {pids}/$CORRAL_TASK_ID; exec sleep 600"
    )
    health = {
        "protocol": "HTTP",
        "path": "/",
        "grace_period": 10,
        "interval": 0.2,
        "timeout": 1,
        "max_consecutive_failures": 2,
    }
    spec = app(
        command=command,
        instances=1,
        cpus=0.5,
        ports=1,
        health_check=health,
        backoff={"initial": 0.2, "max": 1},
    )
    async with LocalCluster(agents=0, work_dir=tmp_path / "cluster", master_args=FAST) as cluster:
        await cluster.add_agent("agent-0", hostname="127.0.0.1")
        await cluster.wait_for_agents(1, 30)
        async with Running(spec, cluster.master) as r:
            await until(
                lambda: r.serving.counts().healthy == 1, 30, "a healthy instance", cluster.logs()
            )
            (sick,) = r.live()
            os.kill(int((pids / sick).read_text()), signal.SIGKILL)
            await until(
                lambda: r.serving.counts().healthy == 1 and sick not in r.live(),
                30,
                "a healthy replacement",
                cluster.logs(),
            )
            assert r.serving.app.unhealthy_kills == 1
            assert any(f"killing {sick}" in e and "unhealthy" in e for e in r.events), r.events
            state = await cluster.state()
            ended = {t.info.task_id: t.status.state for t in state.tasks}
            assert ended[sick] == sdk.TaskState.TASK_STATE_KILLED


# -- the command line -----------------------------------------------------------------------


async def test_corral_run_serving_scales_when_the_app_file_changes(tmp_path: Path) -> None:
    config = tmp_path / "app.json"
    config.write_text(
        json.dumps({"id": "web", "command": "sleep 600", "instances": 2, "cpus": 1, "mem": 64})
    )
    async with LocalCluster(
        agents=2, work_dir=tmp_path / "cluster", master_args=FAST, agent_args=("--simulate",)
    ) as cluster:
        proc = await asyncio.create_subprocess_exec(
            *CORRAL,
            *("run", "serving", "--master", cluster.master, "--config", str(config)),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert proc.stdout is not None
        try:
            lines: list[str] = []

            async def read_until(text: str) -> None:
                while not any(text in line for line in lines):
                    line = (await proc.stdout.readline()).decode()  # type: ignore[union-attr]
                    if not line:
                        raise AssertionError(f"exited before {text!r}:\n{''.join(lines)}")
                    lines.append(line)

            await asyncio.wait_for(read_until("2 wanted, 2 running"), 30)
            config.write_text(
                json.dumps(
                    {"id": "web", "command": "sleep 600", "instances": 5, "cpus": 1, "mem": 64}
                )
            )
            await asyncio.wait_for(read_until("5 wanted, 5 running"), 30)
            assert any("applied: instances 2 -> 5" in line for line in lines), lines
            proc.send_signal(signal.SIGTERM)
            out, err = await asyncio.wait_for(proc.communicate(), 30)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        assert proc.returncode == 0, err.decode()
        assert err.decode() == ""  # the teardown is quiet
        assert "app web: 5 of 5 running" in out.decode()
        state = await cluster.state()
        assert [t.info.task_id for t in state.tasks if not sdk.is_terminal(t.status.state)] == []
