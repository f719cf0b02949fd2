"""A throwaway ZooKeeper server on a free loopback port, from Debian's ``zookeeper`` package.

``corral loadtest --masters N`` starts one when no ``--zk`` is given, and the tests that need a
real ZooKeeper start theirs with it (tests/zk.py). It runs as its own process group with its data
and log in a directory of its own, and ``stop`` (or leaving the ``with``) ends it.

``tickTime`` is 500 ms so sessions of 1 to 10 s can be negotiated (ZooKeeper bounds a session's
timeout to 2 to 20 ticks): the failover tests use a 2 s session.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

JARS = Path("/usr/share/java")
CONF = Path("/etc/zookeeper/conf")
MAIN = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
TICK_MS = 500


class ZooKeeperUnavailable(RuntimeError):
    """Java or the ``zookeeper`` package is missing, or the server did not start."""


def installed() -> str:
    """Why no local ZooKeeper can be started here, or "" when one can."""
    if shutil.which("java") is None:
        return "java is not installed (apt-get install zookeeper brings it)"
    if not (JARS / "zookeeper.jar").exists():
        return "Debian's zookeeper package is not installed (apt-get install zookeeper)"
    return ""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _answers(port: int) -> bool:
    """ZooKeeper's ``srvr`` four-letter word: whether the server serves requests yet."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0) as s:
            s.sendall(b"srvr")
            reply = s.recv(4096)
    except OSError:
        return False
    return b"Mode:" in reply


@dataclass
class LocalZooKeeper:
    """One standalone server: ``start()``, then ``hosts`` (``127.0.0.1:PORT``), ``stop()``."""

    directory: Path
    port: int = 0
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def hosts(self) -> str:
        return f"127.0.0.1:{self.port}"

    def url(self, path: str = "/corral") -> str:
        return f"zk://{self.hosts}{path}"

    def start(self, timeout: float = 30.0) -> LocalZooKeeper:
        """Start the server (on the same port and data when restarted); raises
        ZooKeeperUnavailable with the log's tail if it does not serve within ``timeout``."""
        missing = installed()
        if missing:
            raise ZooKeeperUnavailable(missing)
        self.directory.mkdir(parents=True, exist_ok=True)
        if not self.port:
            self.port = free_port()
        data = self.directory / "data"
        data.mkdir(exist_ok=True)
        config = self.directory / "zoo.cfg"
        config.write_text(
            f"tickTime={TICK_MS}\n"
            f"dataDir={data}\n"
            f"clientPort={self.port}\n"
            "clientPortAddress=127.0.0.1\n"
            "admin.enableServer=false\n"
            "4lw.commands.whitelist=srvr,ruok\n"
            "maxClientCnxns=0\n"
        )
        log = self.directory / "zookeeper.log"
        env = {
            **os.environ,
            "ZOO_LOG_DIR": str(self.directory),
            # A small heap: the tests' server holds a few thousand znodes at most.
            "JAVA_TOOL_OPTIONS": "-Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1",
        }
        with log.open("ab") as out:
            self.process = subprocess.Popen(
                ["java", "-cp", f"{JARS}/*:{CONF}", MAIN, str(config)],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while not _answers(self.port):
            if self.process.poll() is not None or time.monotonic() > deadline:
                tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
                self.stop()
                raise ZooKeeperUnavailable(
                    f"ZooKeeper did not start on port {self.port} within {timeout:g} s:\n{tail}"
                )
            time.sleep(0.1)
        return self

    def stop(self) -> None:
        """Stop the server (its data stays, so ``start`` brings the same ensemble back)."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)

    def __enter__(self) -> LocalZooKeeper:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
