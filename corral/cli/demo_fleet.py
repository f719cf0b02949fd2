"""What `corral demo` runs: a master, four agents (zones a, b, c and a GPU agent in c) and the
three frameworks, as real processes on this machine; each framework run is a `corral run`.

- **serving** is the serving service (`corral serving serve`): the demo creates a small web
  app through its HTTP API (one `http.server` per instance, spread over zones with max_skew 1,
  class serving) and scales it to double halfway through: with batch holding the cpus by then,
  the master preempts batch tasks to make room.
- **batch** runs waves of short tasks (class batch) back to back, each a new `corral run batch`.
- **gang** trains a 2-worker model on the GPU agent (a gang demand: both or neither), again
  and again.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import ssl
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from corral.cli.errors import CliError

if TYPE_CHECKING:
    from corral.frameworks.sdk.testing.port_blocks import PortBlock

from corral.frameworks.sdk import tls as sdk_tls

ZONES = ("a", "b", "c")
# Each agent its own port range: they share this machine's 127.0.0.1, so two instances given
# the same port on two agents would collide (on real hosts the ranges may all be the same).
# The ranges are blocks reserved on this host (port_blocks, as LocalCluster's agents take), so
# a second demo or a test cluster on the same machine gets other ones.
AGENT_RESOURCES = "cpus:4;mem:4096;disk:4096;ports:{ports}"
GPU_RESOURCES = "cpus:4;mem:4096;disk:4096;gpus:2;ports:{ports}"
SERVING_INSTANCES = 3
FRAMEWORKS = ("serving", "batch", "gang")  # the names of the framework runs' processes
FRAMEWORKS_GRACE = 20.0  # SIGTERM to exit: a framework's teardown call, then its summary


class Processes:
    """The demo's processes; every one is stopped on exit, whatever happens."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.procs: list[tuple[str, subprocess.Popen[bytes]]] = []
        self.port_blocks: list[PortBlock] = []
        self.master: str | None = None  # its gRPC address, once it serves
        # Run before the frameworks get SIGTERM (once): what a framework leaves to the master
        # on SIGTERM by design (the serving service keeps its apps) is ended here.
        self.before_frameworks_stop: list[Callable[[], None]] = []

    def reserve_ports(self) -> PortBlock:
        """A block of ports no other Corral on this host holds, until ``release_ports``."""
        # Here, not at the top: every `corral` command imports this module to build its parser.
        from corral.frameworks.sdk.testing import port_blocks

        try:
            block = port_blocks.reserve()
        except port_blocks.NoPortBlock as err:
            raise CliError(f"no ports for the agents: {err}") from None
        self.port_blocks.append(block)
        return block

    def release_ports(self) -> None:
        for block in self.port_blocks:
            block.release()
        self.port_blocks = []

    def spawn(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        log = open(self.work / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen(
            [sys.executable, "-m", "corral.cli.main", *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self.procs.append((name, proc))
        return proc

    def stop(self, names: tuple[str, ...] = (), grace: float = 10.0) -> None:
        """SIGTERM the named processes' groups (all, if none named), newest first; SIGKILL
        what is still there ``grace`` seconds later."""
        chosen = [(n, p) for n, p in self.procs if not names or n.startswith(names)]
        for _name, proc in reversed(chosen):
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        for _name, proc in chosen:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()

    def stop_frameworks(self) -> None:
        """End the framework runs: the hooks first, then SIGTERM (each tears down)."""
        hooks, self.before_frameworks_stop = self.before_frameworks_stop, []
        for hook in hooks:
            hook()
        self.stop(FRAMEWORKS, grace=FRAMEWORKS_GRACE)

    def dead(self, prefix: str) -> list[str]:
        return [n for n, p in self.procs if n.startswith(prefix) and p.poll() is not None]

    def alive(self, prefix: str) -> bool:
        return any(n.startswith(prefix) and p.poll() is None for n, p in self.procs)


def start_agents(procs: Processes, master: str) -> int:
    """The four agents; returns how many. Their hostname is 127.0.0.1, which every worker can
    reach (the gang's MASTER_ADDR is rank 0's agent hostname)."""
    agents = [(f"agent-{z}", AGENT_RESOURCES, f"zone:{z}") for z in ZONES]
    agents.append(("agent-gpu", GPU_RESOURCES, "zone:c;gpu:true"))
    for name, shape, attributes in agents:
        resources = shape.format(ports=procs.reserve_ports().range)
        procs.spawn(
            name,
            "agent",
            *("--master", master, "--resources", resources, "--attributes", attributes),
            *("--hostname", "127.0.0.1", "--work-dir", str(procs.work / name)),
        )
    return len(agents)


def serving_app(instances: int) -> dict[str, Any]:
    return {
        "id": "web",
        "command": f"exec {shlex.quote(sys.executable)} -m http.server $PORT0 --bind 127.0.0.1",
        "instances": instances,
        "cpus": 0.5,
        "mem": 64,
        "ports": 1,
        "spread": {"topology_key": "zone", "max_skew": 1},
        "health_check": {"protocol": "TCP", "port_index": 0, "grace_period": 10, "interval": 2},
    }


@dataclass
class Runs:
    """One framework run again and again: each a `corral run`, its exit code kept."""

    name: str
    args: tuple[str, ...]
    procs: Processes
    codes: list[int] = field(default_factory=list)
    current: subprocess.Popen[bytes] | None = None
    started: int = 0

    def json_file(self, n: int) -> Path:
        return self.procs.work / f"{self.name}-{n}.json"

    def keep_going(self) -> None:
        if self.current is not None and self.current.poll() is None:
            return
        if self.current is not None:
            self.codes.append(self.current.returncode)
        self.started += 1
        self.current = self.procs.spawn(
            f"{self.name}-{self.started}",
            "run",
            *self.args,
            *("--json", str(self.json_file(self.started))),
        )

    def summaries(self) -> list[dict[str, Any]]:
        out = []
        for n in range(1, self.started + 1):
            path = self.json_file(n)
            with contextlib.suppress(OSError, ValueError):
                out.append(json.loads(path.read_text()))
        return out


class Fleet:
    """The three frameworks against ``master``: serving from the start, batch waves and gang
    trainings back to back, serving doubled at ``scale_at`` seconds."""

    def __init__(
        self, procs: Processes, master: str, scale_at: float, batch_tasks: int = 24
    ) -> None:
        self.procs, self.master, self.scale_at = procs, master, scale_at
        self.serving_wanted = SERVING_INSTANCES
        ready = procs.work / "serving.json"
        ready.unlink(missing_ok=True)
        self.serving = procs.spawn(
            "serving",
            *("serving", "serve", "--master", master, "--listen", "127.0.0.1:0"),
            *("--state", str(procs.work / "serving-state"), "--ready-file", str(ready)),
        )
        self.serving_url = _ready(ready, self.serving)["url"]
        self._ssl = _serving_context()
        self._serving_call("PUT", "/v1/apps/web", serving_app(SERVING_INSTANCES))
        procs.before_frameworks_stop.append(self.delete_app)
        self.batch = Runs(
            "batch",
            (
                *("batch", "--master", master, "--tasks", str(batch_tasks)),
                *("--cpus", "0.5", "--mem", "32", "--duration", "4", "--name", "wave"),
            ),
            procs,
        )
        self.gang = Runs(
            "gang",
            (
                *("gang", "--master", master, "--workers", "2", "--gpus-per-worker", "1"),
                *("--cpus-per-worker", "0.5", "--steps", "300", "--step-seconds", "0.01"),
                *("--checkpoint-dir", str(procs.work / "checkpoints"), "--peer-timeout", "20"),
            ),
            procs,
        )
        self.began = time.monotonic()
        self.scaled = False

    def tick(self) -> None:
        self.batch.keep_going()
        self.gang.keep_going()
        if not self.scaled and time.monotonic() - self.began >= self.scale_at:
            self.scaled = True
            self.serving_wanted = 2 * SERVING_INSTANCES
            self._serving_call("PUT", "/v1/apps/web/scale", {"instances": self.serving_wanted})

    def serving_failed(self) -> bool:
        return self.serving.poll() is not None

    def delete_app(self) -> None:
        """Delete the web app, so that its instances end with the demo: SIGTERM stops the
        serving service but leaves its apps running, as Marathon's are, for its failover
        timeout (a week). The service tears the app's framework down (within 10 s)."""
        request = urllib.request.Request(self.serving_url + "/v1/apps/web", method="DELETE")
        with contextlib.suppress(OSError), urllib.request.urlopen(request, timeout=15) as r:
            r.read()

    def _serving_call(self, method: str, path: str, body: object) -> None:
        request = urllib.request.Request(
            self.serving_url + path,
            data=json.dumps(body).encode(),
            method=method,
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10, context=self._ssl) as response:
            response.read()


def _serving_context() -> ssl.SSLContext | None:
    """The demo's credential (the master's local operator credential) for the serving
    service's HTTPS API."""
    tls = sdk_tls.resolve()
    return tls.ssl_context() if isinstance(tls, sdk_tls.TLS) else None


def ready_file(path: Path, proc: subprocess.Popen[bytes], timeout: float) -> dict[str, str] | None:
    """A process's ready file (JSON) once it is written; None when the process ended first or
    ``timeout`` passed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            data: dict[str, str] = json.loads(path.read_text())
            return data
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    return None


def _ready(path: Path, proc: subprocess.Popen[bytes], timeout: float = 60) -> dict[str, str]:
    """The serving service's ready file, once it is written (it opens its API after taking
    the store's lock and its apps back: a fresh store, so at once)."""
    data = ready_file(path, proc, timeout)
    if data is not None:
        return data
    raise RuntimeError(f"the serving service did not start (see {path.parent / 'serving.log'})")
