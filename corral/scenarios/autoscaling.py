"""A `corral autoscaler` beside a scenario's cluster: started on a config of the scenario's, its
HTTP API read in this process (events, node groups), stopped with every agent it started. The
autoscaler scenarios (spread-autoscaler, autoscaler-oscillation) share it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import tempfile
import urllib.request
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

from corral.frameworks.sdk import tls as sdk_tls
from corral.scenarios.base import ScenarioError, must

CORRAL = (sys.executable, "-m", "corral.cli.main")


class AutoscalerRun:
    """``async with AutoscalerRun(master, config) as a``: the autoscaler serving at ``a.url``;
    ``a.state`` is its state directory (the agents it starts keep their work dirs there)."""

    def __init__(
        self, master: str, config: dict[str, Any] | Callable[[Path], dict[str, Any]]
    ) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="corral-scenario-autoscaler-")
        self.state = Path(self._tmp.name)
        self.master = master
        # A function of the state directory when the config names paths in it (a script's).
        self.config = config(self.state) if callable(config) else config
        self.url = ""
        self._proc: asyncio.subprocess.Process | None = None
        self._log: Any = None

    async def __aenter__(self) -> AutoscalerRun:
        config, ready = self.state / "autoscaler.json", self.state / "ready.json"
        config.write_text(json.dumps(self.config))
        self._log = open(self.state / "autoscaler.log", "wb")  # noqa: SIM115 - closed on exit
        self._proc = await asyncio.create_subprocess_exec(
            *CORRAL, "autoscaler", "--master", self.master, "--config", str(config),
            "--state", str(self.state), "--listen", "127.0.0.1:0", "--ready-file", str(ready),
            stdout=self._log, stderr=self._log, start_new_session=True,
        )  # fmt: skip
        try:
            await must(ready.exists, 30, "the autoscaler to serve")
        except BaseException:
            await self.__aexit__(None, None, None)
            raise
        self.url = json.loads(ready.read_text())["url"]
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            if self._proc is not None and self._proc.returncode is None:
                self._proc.terminate()
                await asyncio.wait_for(self._proc.wait(), 30)
        finally:
            if self._log is not None:
                self._log.close()
            stop_nodes(self.state)
            self._tmp.cleanup()

    async def get(self, path: str) -> Any:
        """A GET on its HTTP API (in a thread: the client is urllib's)."""
        try:
            return await asyncio.to_thread(_get, self.url + path)
        except (OSError, ValueError, sdk_tls.TLSError) as err:  # refused, no answer, not JSON
            raise ScenarioError(f"the autoscaler did not answer GET {path}: {err}") from None

    async def events(self) -> list[dict[str, Any]]:
        return list((await self.get("/v1/events"))["events"])

    async def groups(self) -> list[dict[str, Any]]:
        return list((await self.get("/v1/nodegroups"))["node_groups"])


def _get(url: str) -> Any:
    """GET ``url``'s JSON, over TLS with the cluster's credential when it is HTTPS (as the
    CLI's client; the scenarios sit below the CLI)."""
    context = None
    if url.startswith("https://"):
        tls = sdk_tls.resolve()
        if not isinstance(tls, sdk_tls.Insecure):
            context = tls.ssl_context()
    with urllib.request.urlopen(url, timeout=10, context=context) as answer:
        return json.loads(answer.read())


def stop_nodes(state: Path) -> None:
    """The agents the autoscaler started outlive it (their own sessions): stop them, found by
    the state directory on their command line (their work dir is under it)."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if "agent" in argv and str(state) in argv:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(int(pid), signal.SIGKILL)
