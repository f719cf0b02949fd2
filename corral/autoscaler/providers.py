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
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

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
        t = group.template
        out = [
            *self.corral,
            "agent",
            *("--master", self.master),
            *("--name", name),
            *("--resources", t.resources_text),
            *("--work-dir", str(self.dir / name)),
        ]
        if t.attributes:
            out += ["--attributes", t.attributes_text]
        if t.taints:
            out += ["--taints", t.taints_text]
        if group.simulate:
            out.append("--simulate")
        return out + list(group.agent_args)

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


def _pid(handle: str) -> int | None:
    return int(handle) if handle.isdigit() else None


class _gone:
    """Ignore a process that is already gone."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, exc: object, tb: object) -> bool:
        return isinstance(exc, ProcessLookupError | PermissionError)
