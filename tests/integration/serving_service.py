"""A real `corral serving serve` process for tests: started on a free port with a ready file,
talked to over HTTP, killed (SIGKILL) or stopped (SIGTERM), its output kept for failures."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp

from tests.master_http import local_session

CORRAL = (sys.executable, "-m", "corral.cli.main")


async def until(check: Callable[[], bool], timeout: float, what: str, logs: str = "") -> None:
    async def poll() -> None:
        while not check():
            await asyncio.sleep(0.05)

    try:
        await asyncio.wait_for(poll(), timeout)
    except TimeoutError:
        raise AssertionError(f"timed out after {timeout:g} s waiting for {what}\n{logs}") from None


async def until_async(
    check: Callable[[], Any], timeout: float, what: str, logs: Callable[[], str]
) -> Any:
    """Poll the coroutine ``check()`` until it returns something true; that value."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    last: Any = None
    while loop.time() < deadline:
        last = await check()
        if last:
            return last
        await asyncio.sleep(0.1)
    raise AssertionError(
        f"timed out after {timeout:g} s waiting for {what}; last: {last}\n{logs()}"
    )


class ServingProcess:
    # The service's command and its client's (the job service's harness changes them).
    serve_command: tuple[str, ...] = ("serving", "serve")
    client_command: tuple[str, ...] = ("app",)
    url_flag = "--serving"

    def __init__(self, state: Path, master: str, log: Path, *extra: str) -> None:
        self.state, self.master, self.log_path = state, master, log
        self.ready = state.parent / f"{log.stem}.ready.json"
        self.ready.unlink(missing_ok=True)
        self.log = open(log, "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [
                *CORRAL,
                *self.serve_command,
                *("--master", master, "--listen", "127.0.0.1:0"),
                *("--state", str(state), "--ready-file", str(self.ready), *extra),
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.url = ""

    async def wait_ready(self, timeout: float = 30) -> ServingProcess:
        await until(
            lambda: self.ready.exists() or self.proc.poll() is not None,
            timeout,
            f"the {' '.join(self.serve_command)} process's ready file",
            self.logs(),
        )
        assert self.proc.poll() is None, f"the service exited {self.proc.returncode}\n{self.logs()}"
        self.url = json.loads(self.ready.read_text())["url"]
        return self

    def logs(self) -> str:
        if not self.log.closed:
            self.log.flush()
        return f"--- {self.log_path.name}\n" + self.log_path.read_text(errors="replace")[-6000:]

    def kill9(self) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self.log.close()

    async def call(self, method: str, path: str, body: object = None) -> tuple[int, Any]:
        async with (
            local_session() as session,
            session.request(
                method, self.url + path, json=body, timeout=aiohttp.ClientTimeout(total=20)
            ) as response,
        ):
            return response.status, await response.json()

    async def ok(self, method: str, path: str, body: object = None) -> Any:
        status, answer = await self.call(method, path, body)
        assert status in (200, 201), f"{method} {path}: {status} {answer}\n{self.logs()}"
        return answer

    def corral(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """`corral app ...` against this service, as a user runs it."""
        return subprocess.run(
            [*CORRAL, *self.client_command, *args, self.url_flag, self.url],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
