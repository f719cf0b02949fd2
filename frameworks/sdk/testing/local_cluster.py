"""LocalCluster: a real master and real agents as subprocesses, on free 127.0.0.1 ports.

For integration tests of a framework against the real thing::

    async with LocalCluster(agents=2) as cluster:
        async with Driver(MyScheduler(), info, master=cluster.master) as driver: ...

The master binds port 0 and reports its addresses in a ready file. Each process runs in its
own process group and is stopped with SIGTERM, then SIGKILL; its
output goes to a log file in ``work_dir`` which ``logs()`` returns for failure messages.

The cluster is secure as a master started with no flags is: the master issues its certificate
from the user's local CA and writes the operator credential to ``~/.corral/tls``
(``$CORRAL_HOME``), which the agents, a ``Driver`` and ``cluster.channel()`` find there.
``insecure=True`` starts everything in plain text instead (``--insecure`` on both sides);
``master_args=("--tls-dir", ...)`` with ``tls=`` (the clients' credential) uses certificates
of one's own.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import ssl
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import grpc

import corral.tls as sdk_tls
from corral.frameworks.sdk.driver import MAX_MESSAGE_BYTES
from corral.frameworks.sdk.testing import port_blocks
from corral.v1 import operator_pb2 as op
from corral.v1 import operator_pb2_grpc as op_grpc


def free_port() -> int:
    """A port that was free a moment ago (the kernel does not hand it out again at once)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class LocalCluster:
    def __init__(
        self,
        agents: int = 1,
        agent_resources: str = "cpus:4;mem:4096;disk:10000;gpus:0;ports:{ports}",
        *,
        work_dir: str | os.PathLike[str] | None = None,
        master_args: tuple[str, ...] = (),
        agent_args: tuple[str, ...] = (),
        agent_attributes: Sequence[str | Mapping[str, str]] = (),
        corral: tuple[str, ...] = (sys.executable, "-m", "corral.cli.main"),
        ready_timeout: float = 60.0,
        insecure: bool = False,
        tls: sdk_tls.Credentials | None = None,
        agent_tls: sdk_tls.TLS | None = None,
    ) -> None:
        self.agents = agents
        self.insecure = insecure
        self.agent_tls = agent_tls  # the agents' credential, if not the clients' (``tls``)
        # The clients' credential: given, INSECURE, or found once the master wrote it.
        self._tls: sdk_tls.Credentials | None = sdk_tls.INSECURE if insecure else tls
        self.agent_resources = agent_resources
        self.master_args = master_args
        self.agent_args = agent_args
        self.agent_attributes = list(agent_attributes)
        if len(self.agent_attributes) > agents:
            raise ValueError(f"{len(self.agent_attributes)} agent_attributes for {agents} agents")
        self.corral = corral
        self.ready_timeout = ready_timeout
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._work_dir = Path(work_dir) if work_dir is not None else None
        self.master = ""
        self.http = ""
        # The master's whole ready file: its addresses, and "mesos" with --mesos-api.
        self.ready: dict[str, Any] = {}
        self.processes: dict[str, asyncio.subprocess.Process] = {}
        self._logs: dict[str, Path] = {}
        self._killed: set[str] = set()  # stopped by kill(), not by a failure
        # How each agent was started, so restart_agent starts it the same way.
        self._agent_looks: dict[str, tuple[str, str | None]] = {}
        # Each agent's own port range (they all share this host's 127.0.0.1), by name, held
        # until close: a restarted agent gets its range again.
        self._ports: dict[str, port_blocks.PortBlock] = {}

    def port_range(self, name: str = "agent-0") -> tuple[int, int]:
        """Agent ``name``'s port range (first, last): what ``{ports}`` in its resources stands
        for. Ranges are reserved on the host (a lock any process respects) for as long as the
        cluster runs, so no two agents, of this cluster or of another one side by side
        (pytest -n), offer the same port."""
        block = self._ports.get(name)
        if block is None:
            raise KeyError(f"no agent {name!r} was started with {{ports}} in its resources")
        return block.begin, block.end

    def resources(self, spec: str, name: str) -> str:
        """``spec`` with ``{ports}`` replaced by agent ``name``'s port range (``[20000-20099]``),
        reserved at its first use."""
        if "{ports}" not in spec:
            return spec
        block = self._ports.get(name)
        if block is None:
            block = self._ports[name] = port_blocks.reserve()
        return spec.replace("{ports}", block.range)

    @property
    def tls(self) -> sdk_tls.Credentials:
        """The credential the cluster's clients use (found once the master is up)."""
        if self._tls is None:
            self._tls = sdk_tls.resolve()
        return self._tls

    def _client_flags(self) -> tuple[str, ...]:
        """The TLS flags of the agents this cluster starts."""
        if self.insecure:
            return ("--insecure",)
        if self.agent_tls is not None:
            return ("--tls-dir", str(self.agent_tls.cert.parent))
        if isinstance(self._tls, sdk_tls.TLS):
            return (
                "--ca",
                str(self._tls.ca),
                "--cert",
                str(self._tls.cert),
                "--key",
                str(self._tls.key),
            )
        return ()

    def channel(self, options: Sequence[tuple[str, Any]] = ()) -> grpc.aio.Channel:
        """An asyncio channel to the master, with the cluster's credential."""
        return sdk_tls.aio_channel(self.master, self.tls, options)

    @property
    def base_url(self) -> str:
        """The master's HTTP port: ``https://127.0.0.1:PORT`` (``http://`` when insecure)."""
        return sdk_tls.http_base(self.http, self.tls)

    def url(self, path: str) -> str:
        return self.base_url + path

    def ssl_context(self) -> ssl.SSLContext | None:
        """For an HTTP client to the master's port (its certificate names 127.0.0.1): the CA
        checked, the cluster's credential presented; None when insecure."""
        tls = self.tls
        return None if isinstance(tls, sdk_tls.Insecure) else tls.ssl_context()

    async def http_get(self, path: str, timeout: float = 5.0) -> bytes:
        """GET ``path`` from the master's HTTP port (standard library only)."""
        return await asyncio.to_thread(sdk_tls.http_get, path, self.http, self.tls, timeout)

    @property
    def work_dir(self) -> Path:
        if self._work_dir is None:
            raise RuntimeError("the cluster is not started")
        return self._work_dir

    async def __aenter__(self) -> LocalCluster:
        if self._work_dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="corral-cluster-")
            self._work_dir = Path(self._tmp.name)
        self._work_dir.mkdir(parents=True, exist_ok=True)
        try:
            await self.start()
        except BaseException:
            await self.close()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def start(self) -> None:
        # The master binds port 0 and writes the ports it got: no race for a "free" port.
        ready = self.work_dir / "master-ready.json"
        await self._spawn(
            "master",
            "master",
            *("--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", "--ready-file", str(ready)),
            *("--work-dir", str(self.work_dir / "master")),
            *(("--insecure",) if self.insecure else ()),
            *self.master_args,
        )
        await self._wait_ready_file(ready)
        for i in range(self.agents):
            attrs = self.agent_attributes[i] if i < len(self.agent_attributes) else ""
            await self._spawn_agent(f"agent-{i}", attributes=attrs)
        await self.wait_for_agents(self.agents, self.ready_timeout)

    async def _spawn_agent(
        self,
        name: str,
        resources: str | None = None,
        *,
        attributes: str | Mapping[str, str] | None = None,
        hostname: str | None = None,
    ) -> None:
        work = self.work_dir / name
        work.mkdir(parents=True, exist_ok=True)
        if attributes is None and hostname is None:
            attrs, hostname = self._agent_looks.get(name, ("", None))
        else:
            attrs = _attributes_flag(attributes or "")
        self._agent_looks[name] = (attrs, hostname)
        await self._spawn(
            name,
            "agent",
            *(
                "--master",
                self.master,
                "--resources",
                self.resources(resources or self.agent_resources, name),
            ),
            *("--work-dir", str(work)),
            *(("--attributes", attrs) if attrs else ()),
            *(("--hostname", hostname) if hostname else ()),
            *self._client_flags(),
            *self.agent_args,
        )

    async def add_agent(
        self,
        name: str,
        resources: str | None = None,
        *,
        attributes: str | Mapping[str, str] | None = None,
        hostname: str | None = None,
    ) -> None:
        """Start one more agent (a test arranges what the master knows before the agent
        joins), with ``attributes`` (``{"zone": "a"}`` or ``"zone:a;rack:r1"``) and a
        ``hostname`` (default: this host's name) if given. Returns once it is started, not
        registered: see ``wait_for_agents``."""
        await self._spawn_agent(name, resources, attributes=attributes or "", hostname=hostname)

    async def restart_agent(self, name: str, resources: str | None = None) -> None:
        """SIGKILL agent ``name`` (e.g. ``agent-0``; not its tasks, which run in sessions of
        their own) and start it again on the same work dir (with its attributes and hostname),
        optionally with other resources.
        Returns once it is started, not registered: see ``wait_for_agents``."""
        await self.kill(name)
        await self._spawn_agent(name, resources)

    async def _wait_ready_file(self, path: Path) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.ready_timeout
        while True:
            self._check_alive()
            try:
                ready = json.loads(path.read_text())
                self.master, self.http = ready["grpc"], ready["http"]
                self.ready = ready
                return
            except (OSError, ValueError, KeyError):
                pass  # not written (completely) yet
            if loop.time() > deadline:
                raise TimeoutError(f"the master wrote no {path.name}\n{self.logs()}")
            await asyncio.sleep(0.05)  # another process's file: there is no event to await

    def _check_alive(self) -> None:
        """Fail (with the logs) if a process ended that was not killed on purpose."""
        for name, proc in self.processes.items():
            if proc.returncode is not None and name not in self._killed:
                raise RuntimeError(f"{name} exited with code {proc.returncode}\n{self.logs()}")

    async def _spawn(self, name: str, *args: str) -> None:
        log_path = self.work_dir / f"{name}.log"
        with open(log_path, "ab") as out:  # a restarted process appends
            proc = await asyncio.create_subprocess_exec(
                *self.corral,
                *args,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=out,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
            )
        self.processes[name] = proc
        self._killed.discard(name)
        self._logs[name] = log_path

    async def state(self) -> op.State:
        """The master's Operator.GetState answer."""
        # The master's whole state is one message: up to the limit every peer uses (with the
        # default bounds, 50 removed frameworks' 1,000 ended tasks each are ~9 MB).
        options = [("grpc.max_receive_message_length", MAX_MESSAGE_BYTES)]
        async with self.channel(options) as channel:
            stub = op_grpc.OperatorStub(channel)  # type: ignore[no-untyped-call]  # generated
            state: op.State = await stub.GetState(op.GetStateRequest(), timeout=5.0)
            return state

    async def wait_for_agents(self, count: int, timeout: float) -> None:
        """Wait until the master reports ``count`` active agents; fail with the logs if not."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        last = "no answer yet"
        while loop.time() < deadline:
            self._check_alive()
            try:
                state = await self.state()
            except grpc.aio.AioRpcError as err:
                last = f"{err.code().name}: {err.details()}"
            else:
                active = sum(1 for a in state.agents if a.active)
                if active >= count:
                    return
                last = f"{active} of {count} agents active"
            await asyncio.sleep(0.2)  # polling a remote process: there is no event to await
        raise TimeoutError(f"cluster not ready after {timeout:g} s ({last})\n{self.logs()}")

    async def allocation_cycles(self) -> int:
        """How many allocation cycles the master has run (``corral_allocation_cycle_seconds``
        in its /metrics)."""

        # The standard library only: the SDK depends on grpc and structlog, not on an HTTP
        # client or the metrics library (tests/unit/test_sdk_api.py).
        text = (await self.http_get("/metrics")).decode()
        for line in text.splitlines():
            name, _, value = line.partition(" ")
            if name == "corral_allocation_cycle_seconds_count":
                return int(float(value))
        raise RuntimeError("the master's /metrics has no corral_allocation_cycle_seconds_count")

    async def wait_for_cycles(self, count: int, timeout: float) -> None:
        """Wait until the master has run ``count`` more allocation cycles.

        The way to test that something does *not* happen (no offer, no preemption, a demand
        left pending): each cycle is a chance for it, so after ``count`` of them its absence
        means something, however slow the machine. A fixed sleep would give a slow machine
        fewer chances and pass for the wrong reason."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        start = await self.allocation_cycles()
        done = start
        while loop.time() < deadline:
            self._check_alive()
            done = await self.allocation_cycles()
            if done >= start + count:
                return
            await asyncio.sleep(0.05)  # polling a remote process: there is no event to await
        raise TimeoutError(
            f"the master ran {done - start} of {count} allocation cycles in {timeout:g} s"
            f"\n{self.logs()}"
        )

    def logs(self) -> str:
        parts = []
        for name, path in self._logs.items():
            text = path.read_text(errors="replace") if path.exists() else ""
            parts.append(f"--- {name} ---\n{text[-4000:]}")
        return "\n".join(parts)

    async def kill(self, name: str, sig: signal.Signals = signal.SIGKILL) -> None:
        """Send ``sig`` to one process's group (e.g. SIGKILL an agent) and reap it."""
        proc = self.processes[name]
        self._killed.add(name)
        if proc.returncode is None:
            os.killpg(proc.pid, sig)
            await proc.wait()

    def pause(self, name: str) -> None:
        """SIGSTOP one process (not its tasks, which run in sessions of their own): to its
        peers it is partitioned away, its connections open but silent."""
        os.killpg(self.processes[name].pid, signal.SIGSTOP)

    def resume(self, name: str) -> None:
        """SIGCONT a paused process: the partition heals."""
        os.killpg(self.processes[name].pid, signal.SIGCONT)

    async def restart_master(self, *, kill: bool = True) -> None:
        """SIGKILL the master and start a new one on the same addresses and work dir (so the
        same registry): a crash and a restart, as far as agents and frameworks can tell.
        ``kill=False`` starts a master that was killed (``kill("master")``) earlier."""
        if kill:
            await self.kill("master")
        ready = self.work_dir / "master-ready.json"
        ready.unlink(missing_ok=True)
        await self._spawn(
            "master",
            "master",
            *("--grpc", self.master, "--http", self.http, "--ready-file", str(ready)),
            *("--work-dir", str(self.work_dir / "master")),
            *(("--insecure",) if self.insecure else ()),
            *self.master_args,
        )
        await self._wait_ready_file(ready)

    async def close(self) -> None:
        # Agents first, so the master does not log their loss as a failure of the test.
        try:
            for name in sorted(self.processes, key=lambda n: n == "master"):
                await self._terminate(self.processes[name])
        except BaseException:
            # Stopped while stopping (cancelled, a second Ctrl-C): none may be left running.
            for proc in self.processes.values():
                if proc.returncode is None:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGKILL)
            raise
        self.processes.clear()
        for block in self._ports.values():
            block.release()
        self._ports.clear()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
            self._work_dir = None

    @staticmethod
    async def _terminate(proc: asyncio.subprocess.Process, grace: float = 5.0) -> None:
        if proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), grace)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()


def _attributes_flag(attributes: str | Mapping[str, str]) -> str:
    """The agent's ``--attributes`` value."""
    if isinstance(attributes, str):
        return attributes
    return ";".join(f"{k}:{v}" for k, v in attributes.items())
