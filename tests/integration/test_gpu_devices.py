"""GPU devices assigned on a real agent (issue #43): ``--gpu-devices 0,1,2`` and no real GPU.
Each task sees its own devices in CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES, no two tasks
the same, and an agent killed -9 and restarted keeps what its running tasks hold."""

from __future__ import annotations

import asyncio
import subprocess

from corral.frameworks import sdk
from corral.frameworks.sdk.testing import LocalCluster
from tests.integration.corral_cli import corral
from tests.integration.launching import Launcher

GPU = sdk.FrameworkCapability.FRAMEWORK_CAPABILITY_GPU_RESOURCES
SHOW = 'echo "$CUDA_VISIBLE_DEVICES/$NVIDIA_VISIBLE_DEVICES"; exec sleep 300'


async def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(corral, *args, timeout=60)


async def devices(cluster: LocalCluster, task_id: str) -> str:
    """What the task printed: its devices, checked equal in both variables."""
    for _ in range(100):
        out = (await cli("logs", task_id, "--master", cluster.master)).stdout.strip()
        if out:
            cuda, _, nvidia = out.partition("/")
            assert cuda == nvidia, out
            return cuda
        await asyncio.sleep(0.2)
    raise AssertionError(f"task {task_id} printed nothing")


def gpu_task(name: str, gpus: int) -> sdk.TaskInfo:
    return sdk.task(name, SHOW, cpus=0.1, mem=16, gpus=gpus, task_id=name)


async def test_gpu_tasks_get_their_own_devices_kept_across_an_agent_restart() -> None:
    s = Launcher([gpu_task("two", 2)], [gpu_task("one", 1)])
    info = sdk.FrameworkInfo(name="gpus", capabilities=[GPU])
    async with (
        LocalCluster(
            agents=1,
            agent_resources="cpus:2;mem:512;disk:100;ports:{ports}",
            master_args=("--allocation-interval", "0.2"),
            agent_args=("--gpu-devices", "0,1,2"),
        ) as c,
        sdk.Driver(s, info, master=c.master) as d,
    ):
        await s.reaches("two", "RUNNING")
        await s.reaches("one", "RUNNING")
        assert s.offers_seen[0].resources.gpus == 3  # the devices' count
        assert await devices(c, "two") == "0,1"
        assert await devices(c, "one") == "2"
        await c.restart_agent("agent-0")
        await c.wait_for_agents(1, 60)
        # After the restart "two" still holds 0 and 1: the device "one" frees is the next's.
        await d.kill("one")
        await s.reaches("one", "KILLED")
        s.add(gpu_task("next", 1))
        await s.reaches("next", "RUNNING")
        assert await devices(c, "next") == "2"
        assert s.state_of("two") == "RUNNING"
