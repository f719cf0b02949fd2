"""The agent against a master test double over real gRPC on 127.0.0.1, with real processes.

The double (``MasterDouble``) plays only the master's side of AgentService.Connect: it answers
REGISTER with REGISTERED, records everything the agent sends, and lets the test push LAUNCH,
KILL, ACK and SHUTDOWN messages. The agent is the real one: the CLI in a subprocess, or the
``Agent`` class in this loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import psutil
import pytest

from corral.agent.config import AgentConfig
from corral.agent.connection import ReconnectBackoff
from corral.agent.core.status_updates import Backoff
from corral.agent.core.types import TERMINAL_STATES
from corral.agent.runtime import Agent
from corral.resources import parse_resources
from corral.v1 import agent_pb2, agent_pb2_grpc, common_pb2
from tests.pki import TestPKI

S = common_pb2
TIMEOUT = 20.0


async def wait_until(what: str, cond: Callable[[], object], timeout: float = TIMEOUT) -> None:
    """Poll ``cond`` until true; fail with ``what`` after ``timeout`` seconds."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not cond():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
        await asyncio.sleep(0.02)


@dataclass
class Stream:
    agent_id: str
    register: agent_pb2.Register
    outbox: asyncio.Queue[agent_pb2.MasterMessage] = field(default_factory=asyncio.Queue)


class MasterDouble(agent_pb2_grpc.AgentServiceServicer):
    def __init__(self, heartbeat: float = 0.2, auto_ack: bool = True) -> None:
        self.heartbeat = heartbeat
        self.auto_ack = auto_ack
        self.hold_acks: set[str] = set()  # task ids whose statuses are not acknowledged
        self.registrations: list[agent_pb2.Register] = []
        self.statuses: list[common_pb2.TaskStatus] = []
        self.heartbeats: dict[str, int] = {}
        self.streams: dict[str, Stream] = {}
        self._ids = 0

    async def Connect(
        self,
        request_iterator: AsyncIterator[agent_pb2.AgentMessage],
        context: grpc.aio.ServicerContext,
    ) -> None:
        first = await context.read()
        assert first.WhichOneof("message") == "register", "the first message must be REGISTER"
        reg = first.register
        agent_id = reg.info.id
        if not agent_id:
            self._ids += 1
            agent_id = f"agent-{self._ids}"
        self.registrations.append(reg)
        stream = Stream(agent_id, reg)
        self.streams[agent_id] = stream
        await context.write(
            agent_pb2.MasterMessage(
                registered=agent_pb2.Registered(
                    agent_id=agent_id, master_id="double", heartbeat_interval_seconds=self.heartbeat
                )
            )
        )

        async def pump() -> None:
            while True:
                await context.write(await stream.outbox.get())

        writer = asyncio.get_running_loop().create_task(pump())
        try:
            while True:
                msg = await context.read()
                if msg is grpc.aio.EOF:
                    break
                kind = msg.WhichOneof("message")
                if kind == "heartbeat":
                    self.heartbeats[agent_id] = self.heartbeats.get(agent_id, 0) + 1
                elif kind == "status_updates":
                    got = list(msg.status_updates.statuses)
                    self.statuses.extend(got)
                    acks = [s for s in got if self.auto_ack and s.task_id not in self.hold_acks]
                    if acks:
                        self.ack(agent_id, acks)
        finally:
            writer.cancel()
            if self.streams.get(agent_id) is stream:
                del self.streams[agent_id]

    # --- what the test does -------------------------------------------------------------

    def send(self, agent_id: str, msg: agent_pb2.MasterMessage) -> None:
        self.streams[agent_id].outbox.put_nowait(msg)

    def launch(self, agent_id: str, *tasks: common_pb2.TaskInfo, framework_id: str = "fw") -> None:
        self.send(
            agent_id,
            agent_pb2.MasterMessage(
                launch_tasks=agent_pb2.LaunchTasks(framework_id=framework_id, tasks=tasks)
            ),
        )

    def kill(self, agent_id: str, task_id: str, grace: float = 0.0) -> None:
        kill = agent_pb2.KillTask(
            framework_id="fw", task_id=task_id, kill_grace_period_seconds=grace
        )
        self.send(agent_id, agent_pb2.MasterMessage(kill_tasks=agent_pb2.KillTasks(kills=[kill])))

    def ack(self, agent_id: str, statuses: Sequence[common_pb2.TaskStatus]) -> None:
        acks = [agent_pb2.StatusAcknowledgement(task_id=s.task_id, uuid=s.uuid) for s in statuses]
        self.send(
            agent_id,
            agent_pb2.MasterMessage(
                acknowledgements=agent_pb2.StatusAcknowledgements(acknowledgements=acks)
            ),
        )

    def shutdown(self, agent_id: str) -> None:
        self.send(agent_id, agent_pb2.MasterMessage(shutdown=agent_pb2.Shutdown(reason="test")))

    # --- what the test looks at ---------------------------------------------------------

    def of(self, task_id: str) -> list[common_pb2.TaskStatus]:
        return [s for s in self.statuses if s.task_id == task_id]

    def states(self, task_id: str) -> list[int]:
        """The task's states in order of first arrival (duplicates from resends dropped)."""
        seen: set[bytes] = set()
        out: list[int] = []
        for s in self.of(task_id):
            if s.uuid not in seen:
                seen.add(s.uuid)
                out.append(s.state)
        return out

    def final(self, task_id: str) -> common_pb2.TaskStatus | None:
        terminal = {
            S.TASK_STATE_FINISHED,
            S.TASK_STATE_FAILED,
            S.TASK_STATE_KILLED,
            S.TASK_STATE_ERROR,
            S.TASK_STATE_DROPPED,
        }
        for s in self.of(task_id):
            if s.state in terminal:
                return s
        return None


SERVER_OPTIONS = [
    ("grpc.http2.min_recv_ping_interval_without_data_ms", 10_000),
    ("grpc.http2.max_ping_strikes", 0),
]


CERTS: TestPKI  # the double's certificate and the agents' credential, one CA per module


@pytest.fixture(scope="module", autouse=True)
def _certs(tmp_path_factory: pytest.TempPathFactory) -> None:
    global CERTS
    CERTS = TestPKI(tmp_path_factory.mktemp("pki"))


async def start_server(double: MasterDouble, port: int = 0) -> tuple[grpc.aio.Server, int]:
    """The double on a TLS port that requires a client certificate, as a master's does."""
    server = grpc.aio.server(options=SERVER_OPTIONS)
    agent_pb2_grpc.add_AgentServiceServicer_to_server(double, server)  # type: ignore[no-untyped-call]
    bound = server.add_secure_port(f"127.0.0.1:{port}", CERTS.server.grpc_credentials())
    await server.start()
    return server, bound


def shell_task(task_id: str, script: str, **kw: object) -> common_pb2.TaskInfo:
    return common_pb2.TaskInfo(
        task_id=task_id,
        name=task_id,
        command=common_pb2.CommandInfo(value=script, shell=True),
        **kw,  # type: ignore[arg-type]
    )


def group_alive(pgid: int) -> bool:
    """Whether any non-zombie process is left in the group (zombies may wait for a reaper)."""
    for proc in psutil.process_iter(["pid", "status"]):
        try:
            if os.getpgid(proc.pid) == pgid and proc.info["status"] != psutil.STATUS_ZOMBIE:
                return True
        except (ProcessLookupError, psutil.Error):
            continue
    return False


def group_gone(pgid: int) -> bool:
    return not group_alive(pgid)


def read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (FileNotFoundError, ValueError):
        return None


# ---------------------------------------------------------------------------------------
# The CLI agent in a subprocess, real processes
# ---------------------------------------------------------------------------------------


async def test_cli_agent_runs_real_tasks_kills_groups_and_reregisters(tmp_path: Path) -> None:
    double = MasterDouble()
    server, port = await start_server(double)
    work = tmp_path / "agent"
    sandboxes = work / "sandboxes" / "fw"
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "corral.cli.main",
        "agent",
        "--master",
        f"127.0.0.1:{port}",
        "--tls-dir",
        str(CERTS.agent.cert.parent),
        "--work-dir",
        str(work),
        "--hostname",
        "test-agent",
        "--resources",
        "cpus:2;mem:1024;disk:1000;ports:[31000-31010]",
        "--status-retry",
        "1",
        "--attributes",
        "zone:a;rack:r1",
        "--taints",
        "spot=true:NoSchedule",
        "--kill-grace-period",
        "5",
        "--log-level",
        "debug",
        stderr=asyncio.subprocess.PIPE,
    )
    stderr: list[bytes] = []

    async def drain() -> None:
        assert proc.stderr is not None
        while line := await proc.stderr.readline():
            stderr.append(line)

    drainer = asyncio.get_running_loop().create_task(drain())
    try:
        await wait_until("REGISTER from the agent", lambda: double.streams)
        (agent_id,) = double.streams
        info = double.registrations[0].info
        # --status-retry 1: the master must not hold its acknowledgements longer than 0.5 s.
        assert double.registrations[0].status_retry_seconds == 1.0
        assert (info.id, info.hostname, info.resources.cpus, info.resources.mem) == (
            "",
            "test-agent",
            2.0,
            1024.0,
        )
        assert [(r.begin, r.end) for r in info.resources.ports] == [(31000, 31010)]
        assert dict(info.attributes) == {"zone": "a", "rack": "r1"}
        assert [(t.key, t.value, t.effect) for t in info.taints] == [
            ("spot", "true", S.TAINT_EFFECT_NO_SCHEDULE)
        ]
        await wait_until(
            "the checkpointed agent id",
            lambda: (
                (work / "agent_id").exists()
                and (work / "agent_id").read_text().split()[0] == agent_id
            ),
        )
        await wait_until("heartbeats", lambda: double.heartbeats.get(agent_id, 0) >= 2)

        # Launch: a failing shell task, an argv task, one that shows its environment.
        double.hold_acks.add("t-fail")
        double.launch(
            agent_id,
            shell_task("t-fail", "exit 3"),
            common_pb2.TaskInfo(
                task_id="t-echo", command=common_pb2.CommandInfo(arguments=["echo", "hi"])
            ),
            common_pb2.TaskInfo(
                task_id="t-env",
                command=common_pb2.CommandInfo(
                    shell=True,
                    environment={"FOO": "bar"},
                    value='echo "$CORRAL_TASK_ID $CORRAL_FRAMEWORK_ID $CORRAL_AGENT_ID '
                    '$CORRAL_SANDBOX $FOO"',
                ),
            ),
            common_pb2.TaskInfo(task_id="t-empty", command=common_pb2.CommandInfo(shell=True)),
        )
        for task_id in ("t-fail", "t-echo", "t-env", "t-empty"):
            await wait_until(
                f"a terminal status of {task_id}", functools.partial(double.final, task_id)
            )
        assert double.states("t-echo") == [
            S.TASK_STATE_STARTING,
            S.TASK_STATE_RUNNING,
            S.TASK_STATE_FINISHED,
        ]
        assert double.final("t-echo").exit_code == 0  # type: ignore[union-attr]
        failed = double.final("t-fail")
        assert failed is not None
        assert (failed.state, failed.exit_code, failed.agent_id, failed.framework_id) == (
            S.TASK_STATE_FAILED,
            3,
            agent_id,
            "fw",
        )
        assert failed.reason == S.TASK_REASON_COMMAND_EXITED and "code 3" in failed.message
        empty = double.final("t-empty")
        assert empty is not None and empty.state == S.TASK_STATE_ERROR
        assert empty.reason == S.TASK_REASON_INVALID
        uuids = [s.uuid for s in double.statuses]
        assert all(len(u) == 16 for u in uuids)
        assert (sandboxes / "t-echo" / "stdout").read_text() == "hi\n"
        sandbox = sandboxes / "t-env"
        assert (sandbox / "stdout").read_text() == f"t-env fw {agent_id} {sandbox} bar\n"

        # At least once: t-fail's statuses come again until acknowledged.
        await wait_until(
            "a resend of t-fail's FAILED status",
            lambda: [s.uuid for s in double.of("t-fail")].count(failed.uuid) >= 2,
        )
        double.hold_acks.clear()
        double.ack(agent_id, double.of("t-fail"))

        # Kills: one task ends on SIGTERM; one ignores it and needs SIGKILL after its grace.
        double.launch(
            agent_id,
            shell_task("t-sleep", "echo $$ > pid; sleep 60 & sleep 60; wait"),
            shell_task(
                "t-stubborn",
                "trap '' TERM; echo $$ > pid; sleep 60 & sleep 60; wait",
                kill_grace_period_seconds=0.5,
            ),
            shell_task("t-long", "echo $$ > pid; sleep 60"),
        )
        pids = {t: sandboxes / t / "pid" for t in ("t-sleep", "t-stubborn", "t-long")}
        await wait_until(
            "three running tasks with pid files", lambda: all(read_pid(p) for p in pids.values())
        )
        pgids = {t: read_pid(p) for t, p in pids.items()}
        assert all(pgid is not None and group_alive(pgid) for pgid in pgids.values())
        double.kill(agent_id, "t-sleep")
        double.kill(agent_id, "t-stubborn")
        double.kill(agent_id, "ghost")
        for task_id in ("t-sleep", "t-stubborn", "ghost"):
            await wait_until(f"KILLED for {task_id}", functools.partial(double.final, task_id))
        assert double.states("t-sleep")[-2:] == [S.TASK_STATE_KILLING, S.TASK_STATE_KILLED]
        assert "signal 15" in double.final("t-sleep").message  # type: ignore[union-attr]
        assert "signal 9" in double.final("t-stubborn").message  # type: ignore[union-attr]
        ghost = double.final("ghost")
        assert ghost is not None and ghost.state == S.TASK_STATE_KILLED
        assert "not known" in ghost.message
        for task_id in ("t-sleep", "t-stubborn"):
            pgid = pgids[task_id]
            assert pgid is not None
            await wait_until(
                f"the process group of {task_id} to be gone", functools.partial(group_gone, pgid)
            )

        # The master goes away and comes back on the same port: the agent re-registers with
        # the same id and lists the task it still runs with its latest status.
        await server.stop(grace=None)
        double2 = MasterDouble()
        server, _ = await start_server(double2, port)
        await wait_until("re-registration", lambda: double2.registrations)
        rereg = double2.registrations[0]
        assert rereg.info.id == agent_id
        listed = {t.task_id: s.state for t, s in zip(rereg.tasks, rereg.task_statuses, strict=True)}
        assert listed == {"t-long": S.TASK_STATE_RUNNING}
        assert proc.returncode is None

        # SIGTERM: the agent kills its tasks, reports them, and exits 0.
        proc.send_signal(signal.SIGTERM)
        await wait_until("KILLED for t-long after SIGTERM", lambda: double2.final("t-long"))
        final = double2.final("t-long")
        assert final is not None and final.reason == S.TASK_REASON_AGENT_SHUTDOWN
        assert await asyncio.wait_for(proc.wait(), TIMEOUT) == 0, b"".join(stderr).decode()
        long_pgid = pgids["t-long"]
        assert long_pgid is not None and not group_alive(long_pgid)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        for pid_file in sandboxes.glob("*/pid"):
            pgid = read_pid(pid_file)
            if pgid is not None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pgid, signal.SIGKILL)
        drainer.cancel()
        await server.stop(grace=None)


async def test_a_relative_work_dir_keeps_exit_codes(tmp_path: Path) -> None:
    """The shim runs in the task's sandbox: the paths it is given must not be relative to the
    agent's working directory (a relative --work-dir lost every exit status, reported as a
    SIGKILL)."""
    double = MasterDouble()
    server, port = await start_server(double)
    proc = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "corral.cli.main", "agent", "--master", f"127.0.0.1:{port}"),
        *("--tls-dir", str(CERTS.agent.cert.parent)),  # the double's CA, not ~/.corral's
        *("--work-dir", "relative-agent", "--resources", "cpus:1;mem:256"),
        cwd=tmp_path,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        await wait_until("REGISTER from the agent", lambda: double.streams)
        (agent_id,) = double.streams
        double.launch(agent_id, shell_task("t-exit", "exit 3"))
        await wait_until("the task's end", functools.partial(double.final, "t-exit"))
        final = double.final("t-exit")
        assert final is not None
        assert (final.state, final.exit_code) == (S.TASK_STATE_FAILED, 3), final
        assert (tmp_path / "relative-agent" / "sandboxes" / "fw" / "t-exit").is_dir()
    finally:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        await proc.wait()
        await server.stop(grace=None)


# ---------------------------------------------------------------------------------------
# Agent objects in this loop
# ---------------------------------------------------------------------------------------


def agent_config(**fields: Any) -> AgentConfig:
    """A config with short status retries and reconnects, so the tests run quickly."""
    fields.setdefault("status_backoff", Backoff(initial=0.2, maximum=1.0))
    fields.setdefault("reconnect_backoff", ReconnectBackoff(initial=0.05, maximum=0.5))
    fields.setdefault("tls", CERTS.agent)
    return AgentConfig(**fields)


def sim_task(task_id: str, duration: float, exit_code: int = 0) -> common_pb2.TaskInfo:
    return common_pb2.TaskInfo(
        task_id=task_id,
        simulation=common_pb2.SimulationInfo(duration_seconds=duration, exit_code=exit_code),
    )


async def test_fifty_simulated_agents_in_one_process(tmp_path: Path) -> None:
    double = MasterDouble(heartbeat=0.5)
    server, port = await start_server(double)
    resources = parse_resources("cpus:4;mem:4096;disk:1000")
    agents = [
        Agent(
            agent_config(
                hostname=f"sim-{i}",
                resources=resources,
                work_dir=tmp_path,
                master=f"127.0.0.1:{port}",
                simulate=True,
                checkpoint=False,
            )
        )
        for i in range(50)
    ]
    runs = [asyncio.get_running_loop().create_task(a.run()) for a in agents]
    try:
        # The double has answered 50 registrations; each agent learns its id when it reads
        # the answer, which may be a moment later.
        await wait_until(
            "50 registrations, each answered",
            lambda: len(double.streams) == 50 and all(a.agent_id for a in agents),
        )
        assert sorted(r.info.hostname for r in double.registrations) == sorted(
            f"sim-{i}" for i in range(50)
        )
        assert {a.agent_id for a in agents} == set(double.streams)
        for n, agent_id in enumerate(double.streams):
            double.launch(
                agent_id,
                sim_task(f"ok-{n}", 0.05),
                sim_task(f"bad-{n}", 0.1, 7),
                sim_task(f"long-{n}", 600),
            )
        await wait_until(
            "100 short tasks ended",
            lambda: all(double.final(f"{k}-{n}") for k in ("ok", "bad") for n in range(50)),
        )
        for n in range(50):
            # STARTING is optional on the wire: a RUNNING that comes before the writer wakes
            # takes its place (agent/connection.py; tests/unit/test_agent_connection.py checks
            # that exactly). Here, under load, the writer may wake in between.
            states = double.states(f"ok-{n}")
            assert states in (
                [S.TASK_STATE_RUNNING, S.TASK_STATE_FINISHED],
                [S.TASK_STATE_STARTING, S.TASK_STATE_RUNNING, S.TASK_STATE_FINISHED],
            ), states
            bad = double.final(f"bad-{n}")
            assert bad is not None and (bad.state, bad.exit_code) == (S.TASK_STATE_FAILED, 7)
        # Everything acknowledged: the ended tasks are forgotten, the long ones remain.
        await wait_until(
            "acked tasks forgotten",
            lambda: all(
                a.core.task_ids() == [f"long-{n}"]
                for n, a in zip(range(50), agents_by_stream(agents, double), strict=True)
            ),
        )
        for agent_id in list(double.streams):
            double.shutdown(agent_id)
        codes = await asyncio.wait_for(asyncio.gather(*runs), TIMEOUT)
        assert codes == [0] * 50
        assert all(
            double.final(f"long-{n}").state == S.TASK_STATE_KILLED  # type: ignore[union-attr]
            for n in range(50)
        )
    finally:
        for run in runs:
            run.cancel()
        await asyncio.gather(*runs, return_exceptions=True)
        await server.stop(grace=None)


def agents_by_stream(agents: list[Agent], double: MasterDouble) -> list[Agent]:
    """The agents in the order the double saw their streams (the order of the launches)."""
    by_id = {a.agent_id: a for a in agents}
    return [by_id[agent_id] for agent_id in double.streams]


async def test_agent_object_shutdown_from_master_kills_real_tasks(tmp_path: Path) -> None:
    double = MasterDouble()
    server, port = await start_server(double)
    config = agent_config(
        hostname="inproc",
        resources=parse_resources("cpus:1;mem:256"),
        work_dir=tmp_path / "w",
        master=f"127.0.0.1:{port}",
        default_grace_period=0.5,
    )
    agent = Agent(config)
    run = asyncio.get_running_loop().create_task(agent.run())
    try:
        await wait_until("registration", lambda: double.streams)
        (agent_id,) = double.streams
        double.launch(
            agent_id,
            shell_task("a", "sleep 60"),
            shell_task("b", "sleep 60"),
            common_pb2.TaskInfo(
                task_id="c", command=common_pb2.CommandInfo(arguments=["/nonexistent/binary"])
            ),
        )
        await wait_until(
            "two RUNNING tasks",
            lambda: all(S.TASK_STATE_RUNNING in double.states(t) for t in ("a", "b")),
        )
        # A command that cannot start is reported by the task shim, so it may come later.
        await wait_until("the launch failure of c", lambda: double.final("c"))
        failed = double.final("c")
        assert failed is not None and failed.reason == S.TASK_REASON_COMMAND_LAUNCH_FAILED
        assert "/nonexistent/binary" in failed.message
        # A duplicate launch of a running task changes nothing.
        double.launch(agent_id, shell_task("a", "sleep 60"))
        double.shutdown(agent_id)
        assert await asyncio.wait_for(run, TIMEOUT) == 0
        for task_id in ("a", "b"):
            final = double.final(task_id)
            assert final is not None and final.state == S.TASK_STATE_KILLED
            assert final.reason == S.TASK_REASON_AGENT_SHUTDOWN
            assert double.states(task_id).count(S.TASK_STATE_STARTING) == 1
        # A second agent cannot take the same work dir while the first holds it.
        assert (tmp_path / "w" / "agent_id").read_text().split()[0] == agent_id
    finally:
        run.cancel()
        await asyncio.gather(run, return_exceptions=True)
        await server.stop(grace=None)


async def test_statuses_made_while_disconnected_are_sent_after_reregistration(
    tmp_path: Path,
) -> None:
    double = MasterDouble()
    server, port = await start_server(double)
    config = agent_config(
        hostname="flaky",
        resources=parse_resources("cpus:1"),
        work_dir=tmp_path,
        master=f"127.0.0.1:{port}",
        simulate=True,
        checkpoint=False,
    )
    agent = Agent(config)
    run = asyncio.get_running_loop().create_task(agent.run())
    try:
        await wait_until("registration", lambda: double.streams)
        (agent_id,) = double.streams
        double.launch(agent_id, sim_task("t", 0.5))
        await wait_until("RUNNING", lambda: S.TASK_STATE_RUNNING in double.states("t"))
        await server.stop(grace=None)
        await wait_until("the agent to notice", lambda: not agent.core.registered)
        await wait_until(
            "the task to end while disconnected",
            lambda: agent.core.task_state("t") in TERMINAL_STATES,
        )
        double2 = MasterDouble()
        server, _ = await start_server(double2, port)
        await wait_until("FINISHED after re-registration", lambda: double2.final("t"))
        reg = double2.registrations[0]
        assert reg.info.id == agent_id
        assert [s.state for s in reg.task_statuses] == [S.TASK_STATE_FINISHED]
        await wait_until("the task forgotten once acked", lambda: agent.core.task_ids() == [])
        agent.stop()
        assert await asyncio.wait_for(run, TIMEOUT) == 0
    finally:
        run.cancel()
        await asyncio.gather(run, return_exceptions=True)
        await server.stop(grace=None)


async def test_second_agent_on_the_same_work_dir_is_refused(tmp_path: Path) -> None:
    from corral.agent.checkpoint import WorkDirBusy

    double = MasterDouble()
    server, port = await start_server(double)
    config = agent_config(
        hostname="one",
        resources=parse_resources("cpus:1"),
        work_dir=tmp_path,
        master=f"127.0.0.1:{port}",
    )
    first = Agent(config)
    run = asyncio.get_running_loop().create_task(first.run())
    try:
        await wait_until("registration", lambda: double.streams)
        with pytest.raises(WorkDirBusy, match="in use by another agent"):
            await Agent(config).run()
        first.stop()
        assert await asyncio.wait_for(run, TIMEOUT) == 0
    finally:
        run.cancel()
        await asyncio.gather(run, return_exceptions=True)
        await server.stop(grace=None)


async def test_agent_heeds_a_new_heartbeat_interval_from_the_master(tmp_path: Path) -> None:
    double = MasterDouble(heartbeat=3600.0)  # registered with an hour between heartbeats
    server, port = await start_server(double)
    agent = Agent(
        agent_config(
            hostname="hb",
            resources=parse_resources("cpus:1;mem:128"),
            work_dir=tmp_path,
            master=f"127.0.0.1:{port}",
            simulate=True,
            checkpoint=False,
        )
    )
    run = asyncio.get_running_loop().create_task(agent.run())
    try:
        await wait_until("registration", lambda: len(double.streams) == 1)
        [agent_id] = double.streams
        assert double.heartbeats.get(agent_id, 0) == 0
        # Heard over the real stream, the shorter interval applies at once: heartbeats come
        # now, not in an hour.
        double.send(
            agent_id,
            agent_pb2.MasterMessage(heartbeat_interval=agent_pb2.HeartbeatInterval(seconds=0.05)),
        )
        await wait_until("three heartbeats", lambda: double.heartbeats.get(agent_id, 0) >= 3)
        double.shutdown(agent_id)
        assert await asyncio.wait_for(run, TIMEOUT) == 0
    finally:
        run.cancel()
        await asyncio.gather(run, return_exceptions=True)
        await server.stop(grace=None)
