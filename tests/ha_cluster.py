"""A LocalCluster with several masters in one ZooKeeper election (``corral master --zk``).

The masters are ``master-0``... ; agents and frameworks are given the ``zk://`` spec
(``cluster.master``) and find the leader themselves. ``state()`` and ``http`` follow the leader.
A master that exits with the leadership-lost status (3) after losing its ZooKeeper session did
what it must; a supervisor would start it again, as ``restart`` does.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import urllib.error
import urllib.request
from typing import Any

import grpc

from corral.frameworks.sdk import tls as sdk_tls
from corral.frameworks.sdk.detector import LEADER_METADATA
from corral.frameworks.sdk.testing import LocalCluster
from corral.limits import MAX_MESSAGE_BYTES
from corral.loadtest.zookeeper import LocalZooKeeper
from corral.master.ha.candidate import LEADERSHIP_LOST
from corral.v1 import operator_pb2 as op
from corral.v1 import operator_pb2_grpc as op_grpc
from tests.master_http import local_context


class HaCluster(LocalCluster):
    def __init__(
        self,
        zookeeper: LocalZooKeeper,
        masters: int = 3,
        session_timeout: float = 2.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.zookeeper = zookeeper
        self.masters = [f"master-{i}" for i in range(masters)]
        self.session_timeout = session_timeout
        self.url = zookeeper.url("/corral")
        self.addresses: dict[str, tuple[str, str]] = {}  # name -> (grpc, http)

    async def start(self) -> None:
        for name in self.masters:
            await self.start_master(name)
        self.master = self.url
        await self.leader()
        for i in range(self.agents):
            attrs = self.agent_attributes[i] if i < len(self.agent_attributes) else ""
            await self._spawn_agent(f"agent-{i}", attributes=attrs)
        await self.wait_for_agents(self.agents, self.ready_timeout)

    async def start_master(self, name: str) -> None:
        """Start ``name`` (again, on its addresses if it ran before) and wait until it
        listens."""
        ready = self.work_dir / f"{name}-ready.json"
        ready.unlink(missing_ok=True)
        grpc_address, http_address = self.addresses.get(name, ("127.0.0.1:0", "127.0.0.1:0"))
        await self._spawn(
            name,
            "master",
            *("--zk", self.url, "--zk-session-timeout", str(self.session_timeout)),
            *("--grpc", grpc_address, "--http", http_address, "--ready-file", str(ready)),
            *self.master_args,
        )
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.ready_timeout
        while True:
            self._check_alive()
            try:
                info = json.loads(ready.read_text())
                self.addresses[name] = (info["grpc"], info["http"])
                return
            except (OSError, ValueError, KeyError):
                pass  # not written (completely) yet
            if loop.time() > deadline:
                raise TimeoutError(f"{name} wrote no ready file\n{self.logs()}")
            await asyncio.sleep(0.05)  # another process's file: no event to await

    def _check_alive(self) -> None:
        for name, proc in self.processes.items():
            if proc.returncode is None or name in self._killed:
                continue
            if name in self.masters and proc.returncode == LEADERSHIP_LOST:
                continue  # stepped down as it must; `restart` brings it back
            raise RuntimeError(f"{name} exited with code {proc.returncode}\n{self.logs()}")

    def exit_code(self, name: str) -> int | None:
        return self.processes[name].returncode

    def health(self, name: str) -> dict[str, Any] | None:
        """``name``'s /health (blocking), None if it does not answer."""
        _, http = self.addresses[name]
        try:
            with urllib.request.urlopen(
                f"https://{http}/health", timeout=2, context=local_context()
            ) as r:
                body: dict[str, Any] = json.loads(r.read())
                return body
        except (OSError, ValueError, urllib.error.URLError):
            return None

    async def health_of(self, name: str, timeout: float | None = None) -> dict[str, Any]:
        """``name``'s /health once it answers (a standby serves HTTP a moment after the leader
        the cluster waited for)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (timeout or self.ready_timeout)
        while (health := await asyncio.to_thread(self.health, name)) is None:
            self._check_alive()
            if loop.time() > deadline:
                raise TimeoutError(f"{name} did not answer /health\n{self.logs()}")
            await asyncio.sleep(0.05)  # another process's state: no event to await
        return health

    async def leader(self, timeout: float | None = None) -> str:
        """The name of the master whose /health says it leads (waits for one)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (timeout or self.ready_timeout)
        while True:
            self._check_alive()
            for name in self.masters:
                if self.processes[name].returncode is not None:
                    continue
                health = await asyncio.to_thread(self.health, name)
                if health is not None and health.get("role") == "leader":
                    self.http = self.addresses[name][1]
                    return name
            if loop.time() > deadline:
                raise TimeoutError(f"no master leads after {timeout} s\n{self.logs()}")
            await asyncio.sleep(0.05)  # other processes' state: no event to await

    async def state(self) -> op.State:
        """The leader's Operator.GetState: any live master is asked, and a standby's answer
        names the leader, asked next."""
        options = [("grpc.max_receive_message_length", MAX_MESSAGE_BYTES)]
        live = [self.addresses[n][0] for n in self.masters if self.processes[n].returncode is None]
        error: grpc.aio.AioRpcError | None = None
        queue = list(live)
        while queue:
            address = queue.pop(0)
            async with sdk_tls.aio_channel(address, sdk_tls.resolve(), options) as channel:
                stub = op_grpc.OperatorStub(channel)  # type: ignore[no-untyped-call]
                try:
                    state: op.State = await stub.GetState(op.GetStateRequest(), timeout=5.0)
                    return state
                except grpc.aio.AioRpcError as exc:
                    error = exc
                    for key, value in exc.trailing_metadata() or ():
                        if key == LEADER_METADATA and value not in queue:
                            queue.insert(0, str(value))
        assert error is not None, "no master is running"
        raise error

    async def close(self) -> None:
        # Agents first, then the masters, so no master logs their loss as a failure.
        order = sorted(self.processes, key=lambda n: n in self.masters)
        self.processes = {n: self.processes[n] for n in order}
        for name in self.masters:
            if name in self.processes:
                self.resume_quietly(name)
        await super().close()

    def resume_quietly(self, name: str) -> None:
        """SIGCONT, in case a test left it paused (a stopped process ignores SIGTERM)."""
        with contextlib.suppress(ProcessLookupError):
            self.resume(name)
