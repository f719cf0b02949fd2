"""Where nodes come from, behind one small interface (``Provider``): create these nodes, delete
this node, is this node still there. A node is named by the autoscaler (``GROUP-N``) and its
agent registers under that name (``corral agent --name``), which is how the autoscaler knows
its agent in the master's state.

- ``ProcessProvider``: real ``corral agent`` processes on this host (``simulate: true`` in the
  group: simulated tasks). Each runs in a session of its own, so it outlives the autoscaler
  (kill -9 included) and a restarted autoscaler finds it by its pid, checked against its
  command line (a reused pid is not taken for it).
- ``CommandProvider``: the operator's scripts, the seam for clouds (docs/autoscaler.md has an
  example). ``create`` gets the node names, the template and the master in its environment
  and prints one line per node, ``NAME [HANDLE]``; ``delete`` gets ``CORRAL_NODE_NAME`` and
  ``CORRAL_NODE_HANDLE``; ``list`` (optional) prints the names of the nodes that exist.
- ``DockerProvider``: each node a container of the project's image on the Docker engine,
  labelled with its node, group and the autoscaler's state dir.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from corral.autoscaler.config import NodeGroup

SCRIPT_TIMEOUT = 300.0


class ProviderError(Exception):
    """The provider could not do it; the text says why."""


class Provider(Protocol):
    async def create(self, group: NodeGroup, names: Sequence[str]) -> dict[str, str]:
        """Start the nodes; their handles by name. ProviderError: none was started."""

    async def delete(self, group: NodeGroup, name: str, handle: str) -> None:
        """Stop the node (one already gone is no error)."""

    async def exists(self, group: NodeGroup, name: str, handle: str) -> bool: ...


def agent_args(group: NodeGroup, name: str, master: str, work_dir: str) -> list[str]:
    """``corral agent ...`` (without the ``corral``) for node ``name`` of ``group``."""
    t = group.template
    out = [
        "agent",
        *("--master", master),
        *("--name", name),
        *("--resources", t.resources_text),
        *("--work-dir", work_dir),
    ]
    if t.attributes:
        out += ["--attributes", t.attributes_text]
    if t.taints:
        out += ["--taints", t.taints_text]
    if group.simulate:
        out.append("--simulate")
    return out + list(group.agent_args)


class ProcessProvider:
    def __init__(
        self,
        master: str,
        state_dir: Path,
        corral: Sequence[str] = (sys.executable, "-m", "corral.cli.main"),
    ) -> None:
        self.master = master
        self.dir = state_dir / "nodes"
        self.corral = tuple(corral)
        self.children: dict[str, subprocess.Popen[bytes]] = {}  # reaped when they end

    def command(self, group: NodeGroup, name: str) -> list[str]:
        return [*self.corral, *agent_args(group, name, self.master, str(self.dir / name))]

    async def create(self, group: NodeGroup, names: Sequence[str]) -> dict[str, str]:
        self.dir.mkdir(parents=True, exist_ok=True)
        out: dict[str, str] = {}
        for name in names:
            log = open(self.dir / f"{name}.log", "ab")  # noqa: SIM115 - the child holds it
            try:
                proc = subprocess.Popen(
                    self.command(group, name),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # outlives us: a restarted autoscaler finds it
                )
            except OSError as err:
                raise ProviderError(f"cannot start an agent: {err}") from None
            finally:
                log.close()
            self.children[name] = proc
            out[name] = str(proc.pid)
        return out

    async def delete(self, group: NodeGroup, name: str, handle: str) -> None:
        pid = _pid(handle)
        if pid is None or not self._is(pid, name):
            return
        with _gone():
            os.killpg(pid, signal.SIGTERM)
        for _ in range(150):  # up to 15 s for its orderly stop
            if not self._alive(pid, name):
                return
            await asyncio.sleep(0.1)
        with _gone():
            os.killpg(pid, signal.SIGKILL)
        for _ in range(50):
            if not self._alive(pid, name):
                return
            await asyncio.sleep(0.1)

    async def exists(self, group: NodeGroup, name: str, handle: str) -> bool:
        pid = _pid(handle)
        return pid is not None and self._alive(pid, name)

    def _alive(self, pid: int, name: str) -> bool:
        child = self.children.get(name)
        if child is not None and child.pid == pid:
            if child.poll() is not None:  # reaps it
                del self.children[name]
                return False
            return True
        return self._is(pid, name)

    @staticmethod
    def _is(pid: int, name: str) -> bool:
        """Process ``pid`` is node ``name``'s agent (not a stranger with a reused pid)."""
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            return False
        try:
            i = argv.index(b"--name")
        except ValueError:
            return False
        return i + 1 < len(argv) and argv[i + 1] == name.encode() and b"agent" in argv


class CommandProvider:
    def __init__(self, master: str) -> None:
        self.master = master

    def _env(self, group: NodeGroup, **more: str) -> dict[str, str]:
        t = group.template
        env = dict(os.environ)
        env.update(
            CORRAL_MASTER=self.master,
            CORRAL_NODE_GROUP=group.name,
            CORRAL_NODE_RESOURCES=t.resources_text,
            CORRAL_NODE_ATTRIBUTES=t.attributes_text,
            CORRAL_NODE_TAINTS=t.taints_text,
            **more,
        )
        return env

    async def _run(self, script: str, env: dict[str, str], what: str) -> str:
        proc = await asyncio.create_subprocess_shell(
            script,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            start_new_session=True,
        )
        try:
            out, err = await asyncio.wait_for(proc.communicate(), SCRIPT_TIMEOUT)
        except TimeoutError:
            with _gone():
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
            raise ProviderError(f"{what} script ran past {SCRIPT_TIMEOUT:g} s") from None
        if proc.returncode != 0:
            last = (err.decode(errors="replace").strip().splitlines() or [""])[-1]
            raise ProviderError(f"{what} script exited {proc.returncode}: {last}")
        return out.decode(errors="replace")

    async def create(self, group: NodeGroup, names: Sequence[str]) -> dict[str, str]:
        assert group.command is not None
        env = self._env(group, CORRAL_NODE_NAMES=" ".join(names))
        out = await self._run(group.command.create, env, "create")
        handles: dict[str, str] = {}
        for line in out.splitlines():
            parts = line.split()
            if parts and parts[0] in names:
                handles[parts[0]] = parts[1] if len(parts) > 1 else parts[0]
        return handles

    async def delete(self, group: NodeGroup, name: str, handle: str) -> None:
        assert group.command is not None
        env = self._env(group, CORRAL_NODE_NAME=name, CORRAL_NODE_HANDLE=handle)
        await self._run(group.command.delete, env, "delete")

    async def exists(self, group: NodeGroup, name: str, handle: str) -> bool:
        assert group.command is not None
        if not group.command.list:
            return True  # no list script: registration (or its timeout) decides
        out = await self._run(group.command.list, self._env(group), "list")
        return name in out.split()


LABEL_NODE = "corral.autoscaler.node"
LABEL_GROUP = "corral.autoscaler.group"
LABEL_STATE = "corral.autoscaler.state"  # the autoscaler's state dir: whose node it is
AGENT_WORK_DIR = "/var/lib/corral/agent"  # the image's, owned by its user


class DockerProvider:
    """Each node a container of the project's image running ``corral agent`` (the engine's API
    over its socket, ``DOCKER_HOST`` or the default one, through aiodocker as the agent's docker
    containerizer does). The handle is the container's id; the container carries the node's
    name, group and the autoscaler's state dir as labels, and is deleted with it (stopped with
    the agent's orderly stop, then removed): nothing is left on the engine."""

    def __init__(self, master: str, state_dir: Path, host: str | None = None) -> None:
        self.master = master
        self.state = str(state_dir.absolute())
        self.host = host or os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
        self._docker: Any = None

    @property
    def docker(self) -> Any:
        import aiodocker  # only for a docker group: the engine's client loads aiohttp

        if self._docker is None:  # made in the running loop (aiohttp's session needs one)
            self._docker = aiodocker.Docker(url=self.host)
        return self._docker

    def container(self, group: NodeGroup, name: str) -> dict[str, Any]:
        """The engine's create body for node ``name``."""
        d = group.docker
        assert d is not None
        host: dict[str, Any] = {"NetworkMode": d.network, "Init": True}
        if d.volumes:
            host["Binds"] = list(d.volumes)
        body: dict[str, Any] = {
            "Image": d.image,
            "Cmd": agent_args(group, name, d.master or self.master, AGENT_WORK_DIR),
            "Labels": {LABEL_NODE: name, LABEL_GROUP: group.name, LABEL_STATE: self.state},
            "Env": [f"{k}={v}" for k, v in d.env],
            "HostConfig": host,
        }
        if d.user:
            body["User"] = d.user
        return body

    async def create(self, group: NodeGroup, names: Sequence[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        for name in names:
            made = None
            try:
                made = await self.docker.containers.create(self.container(group, name))
                await made.start()
            except _engine_errors() as err:
                if made is not None:  # created, not started: no half-made node stays
                    with contextlib.suppress(*_engine_errors()):
                        await made.delete(force=True)
                if out:
                    return out  # those started are the autoscaler's; the rest time out
                raise ProviderError(
                    f"the Docker engine refused node {name}: {_said(err)}"
                ) from None
            out[name] = str(made.id)
        return out

    async def delete(self, group: NodeGroup, name: str, handle: str) -> None:
        try:
            box = await self.docker.containers.get(handle)
            if (box["Config"]["Labels"] or {}).get(LABEL_NODE) != name:
                return  # not this node's container
            with contextlib.suppress(*_engine_errors()):
                await box.stop(t=15)  # the agent's orderly stop (SIGTERM), as for a process
            await box.delete(force=True)
        except _engine_errors() as err:
            if getattr(err, "status", None) == 404:
                return  # gone already
            raise ProviderError(f"the Docker engine did not remove {name}: {_said(err)}") from None

    async def exists(self, group: NodeGroup, name: str, handle: str) -> bool:
        try:
            box = await self.docker.containers.get(handle)
        except _engine_errors() as err:
            if getattr(err, "status", None) == 404:
                return False
            raise ProviderError(f"the Docker engine: {_said(err)}") from None
        labels = box["Config"]["Labels"] or {}
        return labels.get(LABEL_NODE) == name and bool(box["State"]["Running"])

    async def close(self) -> None:
        if self._docker is not None:
            await self._docker.close()
            self._docker = None


def _engine_errors() -> tuple[type[BaseException], ...]:
    """What a call to the engine raises when it refuses or does not answer."""
    import aiodocker
    import aiohttp

    return (aiodocker.DockerError, aiohttp.ClientError, OSError, TimeoutError)


def _said(err: BaseException) -> str:
    message = getattr(err, "message", None)
    return str(message or err).strip()


def _pid(handle: str) -> int | None:
    return int(handle) if handle.isdigit() else None


class _gone:
    """Ignore a process that is already gone."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, exc: object, tb: object) -> bool:
        return isinstance(exc, ProcessLookupError | PermissionError)
