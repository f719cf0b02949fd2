"""Tasks in images on a real Docker engine (issue #43): a real master, a real agent with
``--containerizers process,docker`` and the engine's own containers.

What each test proves is in its name; ``docker inspect`` is the engine's own word on limits,
names and labels. Every container a test's agent starts is removed at its end (by the agent's
work-dir label), and the clean-stop test checks the agent itself left none.
"""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from corral.frameworks import sdk
from corral.frameworks.sdk.testing import LocalCluster
from tests.docker_engine import (
    containers_under,
    docker_cluster,
    inspect,
    remove_containers_under,
    require_docker,
)
from tests.integration.corral_cli import corral
from tests.integration.launching import Launcher

pytestmark = pytest.mark.e2e
WAIT = 90.0


@pytest.fixture
def image() -> str:
    return require_docker()


@pytest.fixture
async def cluster(tmp_path: Path, image: str) -> AsyncIterator[LocalCluster]:
    resources = "cpus:2;mem:1024;disk:1000;ports:{ports}"
    async with docker_cluster(tmp_path, resources, ("--kill-grace-period", "5")) as c:
        yield c


def container_id(s: Launcher, task_id: str) -> str:
    last = s.last(task_id)
    assert last is not None and last.container_status.container_id, last
    return last.container_status.container_id


async def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(corral, *args, timeout=60)


async def test_a_container_task_runs_with_its_limits_and_its_output_in_corral_logs(
    cluster: LocalCluster, image: str
) -> None:
    boxed = sdk.task(
        "boxed",
        "echo hello from $CORRAL_TASK_ID; echo to-stderr >&2; exec sleep 300",
        cpus=0.5,
        mem=64,
        cpus_limit=0.5,
        mem_limit=64,
        task_id="boxed",
        container=sdk.docker(image),
    )
    s = Launcher([boxed])
    async with sdk.Driver(s, sdk.FrameworkInfo(name="images"), master=cluster.master) as d:
        await s.reaches("boxed", "RUNNING", WAIT)
        cid = container_id(s, "boxed")
        info = inspect(cid)
        host = info["HostConfig"]
        assert host["NanoCpus"] == 500_000_000  # cpus 0.5
        assert host["Memory"] == 64 * 1024 * 1024  # mem_limit 64 MiB
        assert host["MemorySwap"] == host["Memory"]  # no swap past the limit
        assert host["CpuShares"] == 512
        assert host["NetworkMode"] == "host" and not host["Privileged"]
        labels = info["Config"]["Labels"]
        assert labels["corral.task"] == "boxed"
        assert labels["corral.framework"] == d.framework_id
        assert labels["corral.agent"]
        assert labels["corral.work_dir"].startswith(str(cluster.work_dir))
        assert info["Name"].startswith("/corral-boxed-")
        m = ("--master", cluster.master)
        out = await cli("logs", "boxed", *m)
        for _ in range(50):
            if "hello from boxed" in out.stdout:
                break
            await asyncio.sleep(0.2)
            out = await cli("logs", "boxed", *m)
        assert out.stdout == "hello from boxed\n", out
        assert (await cli("logs", "boxed", "--stderr", *m)).stdout == "to-stderr\n"
        described = (await cli("describe", "task", "boxed", *m)).stdout
        assert f"Image           {image}" in described or image in described, described
        assert cid in described, described
        # A kill: SIGTERM reaches the task through docker-init; the container is removed.
        await d.kill("boxed")
        v = await s.reaches("boxed", "KILLED", WAIT)
        assert "signal 15" in v.message, v
        assert not containers_under(cluster.work_dir)


async def test_exit_codes_become_finished_and_failed(cluster: LocalCluster, image: str) -> None:
    ok = sdk.task("ok", ["/bin/true"], cpus=0.1, mem=16, task_id="ok", container=sdk.docker(image))
    bad = sdk.task("bad", "exit 3", cpus=0.1, mem=16, task_id="bad", container=sdk.docker(image))
    s = Launcher([ok, bad])
    async with sdk.Driver(s, sdk.FrameworkInfo(name="exits"), master=cluster.master):
        assert (await s.reaches("ok", "FINISHED", WAIT)).exit_code == 0
        v = await s.reaches("bad", "FAILED", WAIT)
        assert v.exit_code == 3 and "exited with code 3" in v.message, v


async def test_a_memory_hog_in_a_container_fails_with_the_memory_limit_reason(
    cluster: LocalCluster, image: str
) -> None:
    hog = sdk.task(
        "hog",
        ["python3", "-c", "b = bytearray(200 * 1024 * 1024); import time; time.sleep(60)"],
        cpus=0.2,
        mem=64,
        mem_limit=64,
        task_id="hog",
        container=sdk.docker(image),
    )
    s = Launcher([hog])
    async with sdk.Driver(s, sdk.FrameworkInfo(name="hog"), master=cluster.master):
        v = await s.reaches("hog", "FAILED", WAIT)
        assert v.reason == "MEMORY_LIMIT", v
        assert "memory limit exceeded" in v.message, v


async def test_a_missing_image_fails_the_task_naming_it_within_seconds(
    cluster: LocalCluster,
) -> None:
    missing = "corral-test-no-such-image:0"
    t = sdk.task("m", None, cpus=0.1, mem=16, task_id="m", container=sdk.docker(missing))
    s = Launcher([t])
    async with sdk.Driver(s, sdk.FrameworkInfo(name="missing"), master=cluster.master):
        loop = asyncio.get_running_loop()
        await s.until("an offer", lambda: bool(s.offers_seen), WAIT)
        started = loop.time()  # the launch follows the first offer at once
        v = await s.reaches("m", "FAILED", WAIT)
        took = loop.time() - started
        assert v.reason == "COMMAND_LAUNCH_FAILED", v
        assert missing in v.message and "could not be pulled" in v.message, v
        print(f"missing image: FAILED {took:.2f}s after the offer it was launched on")


async def test_bridge_network_publishes_the_mapped_port(cluster: LocalCluster, image: str) -> None:
    first, _ = cluster.port_range()
    server = sdk.task(
        "web",
        ["python3", "-m", "http.server", "8080", "--directory", "/mnt/mesos/sandbox"],
        cpus=0.1,
        mem=64,
        ports=[(first, first)],
        task_id="web",
        container=sdk.docker(image, network="bridge", port_mappings={8080: first}),
    )
    s = Launcher([server])
    async with sdk.Driver(s, sdk.FrameworkInfo(name="web"), master=cluster.master):
        await s.reaches("web", "RUNNING", WAIT)
        info = inspect(container_id(s, "web"))
        bindings = info["HostConfig"]["PortBindings"]
        assert bindings == {"8080/tcp": [{"HostIp": "", "HostPort": str(first)}]}
        import urllib.request

        body = b""
        for _ in range(100):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{first}/stdout", timeout=2) as r:
                    body = r.read()
                break
            except OSError:
                await asyncio.sleep(0.2)
        assert body is not None
        with urllib.request.urlopen(f"http://127.0.0.1:{first}/", timeout=5) as r:
            assert r.status == 200


async def test_agent_kill_9_and_restart_reattaches_to_the_same_container(
    cluster: LocalCluster, image: str
) -> None:
    t = sdk.task(
        "long",
        "i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.5; done",
        cpus=0.1,
        mem=32,
        task_id="long",
        container=sdk.docker(image),
    )
    s = Launcher([t])
    async with sdk.Driver(s, sdk.FrameworkInfo(name="restart"), master=cluster.master) as d:
        await s.reaches("long", "RUNNING", WAIT)
        cid = container_id(s, "long")
        await cluster.restart_agent("agent-0")
        await cluster.wait_for_agents(1, WAIT)
        # Still the one container, running, and its log still copied into the sandbox.
        rows = containers_under(cluster.work_dir)
        assert [r["ID"] for r in rows] == [cid[:12]], rows
        assert inspect(cid)["State"]["Running"]
        m = ("--master", cluster.master)
        before = (await cli("logs", "long", *m)).stdout.count("tick")
        for _ in range(50):
            now = (await cli("logs", "long", *m)).stdout
            if now.count("tick") > before + 2:
                break
            await asyncio.sleep(0.3)
        lines = now.splitlines()
        assert now.count("tick") > before + 2, now
        assert len(lines) == len(set(lines)), "a log line copied twice after the restart"
        await d.kill("long")
        await s.reaches("long", "KILLED", WAIT)
        assert not containers_under(cluster.work_dir)


async def test_a_clean_agent_stop_leaves_no_container(tmp_path: Path, image: str) -> None:
    c = LocalCluster(
        agents=1,
        work_dir=tmp_path,
        master_args=("--allocation-interval", "0.2"),
        agent_args=("--containerizers", "process,docker"),
    )
    try:
        async with c:
            t = sdk.task("s", "exec sleep 300", cpus=0.1, mem=16, task_id="s")
            t.container.CopyFrom(sdk.docker(image))
            s = Launcher([t])
            async with sdk.Driver(s, sdk.FrameworkInfo(name="stop"), master=c.master):
                await s.reaches("s", "RUNNING", WAIT)
                assert len(containers_under(tmp_path)) == 1
        assert not containers_under(tmp_path), "the agent's clean stop left a container"
    finally:
        remove_containers_under(tmp_path)


class EngineProxy:
    """A unix socket that forwards to the real engine's until ``cut``: the engine going away,
    as the agent sees it, without stopping the engine other tests on this machine share."""

    def __init__(self, path: Path, engine: str = "/var/run/docker.sock") -> None:
        self.path, self.engine = path, engine
        self.server: asyncio.AbstractServer | None = None
        self.writers: set[asyncio.StreamWriter] = set()

    async def start(self) -> None:
        self.server = await asyncio.start_unix_server(self._serve, path=str(self.path))

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_unix_connection(self.engine)
        self.writers |= {writer, up_writer}

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except OSError:
                pass
            finally:
                dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    async def cut(self) -> None:
        assert self.server is not None
        self.server.close()
        for w in self.writers:
            w.close()
        await self.server.wait_closed()
        self.path.unlink(missing_ok=True)


async def test_with_the_engine_gone_container_tasks_fail_and_process_tasks_go_on(
    tmp_path: Path, image: str
) -> None:
    proxy = EngineProxy(tmp_path / "engine.sock")
    await proxy.start()
    c = LocalCluster(
        agents=1,
        work_dir=tmp_path / "cluster",
        master_args=("--allocation-interval", "0.2"),
        agent_args=(
            *("--containerizers", "process,docker"),
            *("--docker-host", f"unix://{proxy.path}"),
        ),
    )
    boxed = sdk.task("boxed", "exec sleep 300", cpus=0.1, mem=16, task_id="boxed")
    boxed.container.CopyFrom(sdk.docker(image))
    plain = sdk.task("plain", "sleep 300", cpus=0.1, mem=16, task_id="plain")
    try:
        async with c:
            s = Launcher([boxed, plain])
            async with sdk.Driver(s, sdk.FrameworkInfo(name="gone"), master=c.master):
                await s.reaches("boxed", "RUNNING", WAIT)
                await s.reaches("plain", "RUNNING", WAIT)
                await proxy.cut()
                v = await s.reaches("boxed", "FAILED", WAIT)
                assert "docker engine" in v.message and "went away" in v.message, v
                late = sdk.task(
                    "late", None, cpus=0.1, mem=16, task_id="late", container=sdk.docker(image)
                )
                again = sdk.task("again", "sleep 300", cpus=0.1, mem=16, task_id="again")
                s.add(late, again)
                v = await s.reaches("late", "FAILED", WAIT)
                assert "not reachable" in v.message and str(proxy.path) in v.message, v
                await s.reaches("again", "RUNNING", WAIT)
                assert s.state_of("plain") == "RUNNING"
    finally:
        remove_containers_under(tmp_path)


async def test_corral_run_batch_with_an_image_runs_its_tasks_in_containers(
    cluster: LocalCluster, image: str
) -> None:
    # /.dockerenv exists only inside a container: the command fails on the host.
    done = await cli(
        *("run", "batch", "--tasks", "2", "--cpus", "0.1", "--mem", "32"),
        *("--image", image, "--command", "test -f /.dockerenv", "--progress", "none"),
        *("--give-up-after", "60", "--master", cluster.master),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 succeeded" in done.stdout or "succeeded" in done.stdout, done.stdout
    assert not containers_under(cluster.work_dir)


async def test_a_container_whose_task_the_master_ended_while_its_agent_was_down_is_removed(
    cluster: LocalCluster, image: str
) -> None:
    t = sdk.task(
        "orphan", "exec sleep 300", cpus=0.1, mem=16, task_id="orphan", container=sdk.docker(image)
    )
    s = Launcher([t])
    async with sdk.Driver(s, sdk.FrameworkInfo(name="gone"), master=cluster.master) as d:
        await s.reaches("orphan", "RUNNING", WAIT)
        await cluster.kill("agent-0")  # kill -9: the container runs on
        assert len(containers_under(cluster.work_dir)) == 1
        await d.teardown()  # the master forgets the framework and its tasks
    await cluster.restart_agent("agent-0")
    await cluster.wait_for_agents(1, WAIT)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT
    while containers_under(cluster.work_dir):
        assert loop.time() < deadline, "the container of a task the master ended is still there"
        await asyncio.sleep(0.3)


async def test_a_job_in_a_container_runs_its_tasks_in_the_image(
    tmp_path: Path, cluster: LocalCluster, image: str
) -> None:
    """The job service's `container` (issue #44): the job's tasks run in the image on the
    agent that runs images; the command fails anywhere but inside a container."""
    from tests.integration.job_service import JobsProcess

    jobs = JobsProcess(tmp_path / "jobs-state", cluster.master, tmp_path / "jobs.log")
    try:
        await jobs.wait_ready()
        stage = {"name": "s", "tasks": 2, "cpus": 0.1, "mem": 32, "command": "test -f /.dockerenv"}
        job = {"name": "boxed", "stages": [stage], "container": {"image": image}}
        await jobs.ok("POST", "/v1/jobs", job)
        done = await jobs.wait_phase("boxed", "Succeeded", "Failed", timeout=WAIT)
        assert done["phase"] == "Succeeded", done
    finally:
        jobs.stop()
    assert not containers_under(cluster.work_dir)
