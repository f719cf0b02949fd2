"""Health checks, run by the framework against an instance: HTTP (GET, 2xx/3xx healthy) or
TCP on one of its ports on its agent's hostname, or a shell command run here, by the framework
(for an instance in a container: inside its container, container_checks.py). The ports of an
instance in a container are its host ports (the mapped ones with BRIDGE network).

Mesos runs command checks on the agent, inside the task's sandbox; Corral's agents run only
tasks, so the serving framework runs them itself, with the instance's ``HOST``, ``PORT`` and
``PORT0..`` in the environment. That is right for what such checks usually do over the network
(``curl http://$HOST:$PORT0/ready``) and wrong for checks of the task's local files: those
belong in the task itself (exit non-zero and the instance is restarted).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal

from corral.frameworks.serving.app import HealthCheck, ReadinessCheck


async def check(
    hc: HealthCheck | ReadinessCheck, host: str, ports: list[int], in_container: str = ""
) -> tuple[bool, str]:
    """One check within ``hc.timeout``: (healthy, why not). ``in_container``: the task id of
    an instance in a container, whose COMMAND checks run inside it (container_checks.py)."""
    try:
        async with asyncio.timeout(hc.timeout):
            if hc.protocol == "COMMAND" and in_container:
                from corral.frameworks.serving.container_checks import run_in_container

                return await run_in_container(in_container, hc.command)
            if hc.protocol == "COMMAND":
                return await _command(hc.command, host, ports)
            port = ports[hc.port_index]
            if hc.protocol == "TCP":
                _, writer = await asyncio.open_connection(host, port)
                await _close(writer)
                return True, ""
            return await _http(host, port, hc.path)
    except TimeoutError:
        return False, f"no answer within {hc.timeout:g} s"
    except OSError as err:
        return False, err.strerror or str(err)


async def _http(host: str, port: int, path: str) -> tuple[bool, str]:
    reader, writer = await asyncio.open_connection(host, port)
    try:
        request = (
            f"GET {path} HTTP/1.0\r\nHost: {host}:{port}\r\nUser-Agent: corral-serving\r\n\r\n"
        )
        writer.write(request.encode())
        await writer.drain()
        line = (await reader.readline()).decode("latin-1")
    finally:
        await _close(writer)
    parts = line.split()
    if len(parts) < 2 or not parts[1].isdigit():
        return False, f"not an HTTP answer: {line.strip()[:80]!r}"
    code = int(parts[1])
    return (True, "") if 200 <= code < 400 else (False, f"HTTP {code}")


async def _close(writer: asyncio.StreamWriter) -> None:
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()


async def _command(command: str, host: str, ports: list[int]) -> tuple[bool, str]:
    env = {**os.environ, "HOST": host, **_port_env(ports)}
    proc = await asyncio.create_subprocess_shell(
        command,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
        start_new_session=True,  # so a timeout kills what the command started too
    )
    try:
        code = await proc.wait()
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
    return (True, "") if code == 0 else (False, f"exit code {code}")


def _port_env(ports: list[int]) -> dict[str, str]:
    env = {f"PORT{i}": str(p) for i, p in enumerate(ports)}
    if ports:
        env["PORT"] = str(ports[0])
    return env
