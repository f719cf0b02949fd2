"""A master keeps a registry by default (issue #41, item 3): `corral master` with no flags keeps
it in $CORRAL_HOME/master, says so at start, holds that work dir against a second master, and
remembers what operators set across a restart; forgetting is `--registry memory`, a warning."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integration.corral_cli import corral

pytestmark = pytest.mark.e2e

START = 60.0  # seconds a master may take to start on a busy machine (numba's cache, TLS)


class Master:
    """`corral master` on free ports with ``home`` as its $CORRAL_HOME, output in a file."""

    def __init__(self, home: Path, log: Path, *flags: str) -> None:
        self.home, self.log = home, log
        self.ready = log.with_suffix(".ready.json")
        self.ready.unlink(missing_ok=True)
        with log.open("ab") as out:
            self.proc = subprocess.Popen(
                [
                    *(sys.executable, "-m", "corral.cli.main", "master"),
                    *("--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0"),
                    *("--ready-file", str(self.ready), "--log-json", *flags),
                ],
                stdout=out,
                stderr=out,
                env={**os.environ, "CORRAL_HOME": str(home)},
                start_new_session=True,
            )
        self.grpc = ""

    def serving(self) -> str:
        deadline = time.monotonic() + START
        while not self.ready.exists():
            assert self.proc.poll() is None, f"the master exited:\n{self.output()}"
            assert time.monotonic() < deadline, f"no ready file:\n{self.output()}"
            time.sleep(0.05)  # another process's file: nothing to await
        self.grpc = json.loads(self.ready.read_text())["grpc"]
        return self.grpc

    def exited(self) -> int:
        try:
            return self.proc.wait(timeout=START)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the master still runs:\n{self.output()}") from None

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()

    def logged(self, event: str) -> dict[str, object]:
        for line in self.output().splitlines():
            if line.startswith("{") and json.loads(line).get("event") == event:
                return dict(json.loads(line))
        raise AssertionError(f"no {event} in the log:\n{self.output()}")


def test_a_master_with_no_flags_keeps_its_registry_under_corral_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {"CORRAL_HOME": str(home)}
    first = Master(home, tmp_path / "first.log")
    try:
        addr = first.serving()
        work = home / "master"
        assert (work / "registry.db").is_file() and (work / "registry.id").is_file()
        started = first.logged("master_started")  # says where the registry is
        assert started["registry"] == f"sqlite:{work / 'registry.db'}", started
        # A second master with no flags on this host would share the registry: refused.
        second = Master(home, tmp_path / "second.log")
        assert second.exited() == 1
        assert f"work dir {work} is in use by another master (use --work-dir)" in second.output()
        done = corral("set", "weight", "web", "3", "--master", addr, env_extra=env)
        assert done.returncode == 0, done.stderr
    finally:
        first.stop()
    # Restarted with no flags, it remembers what the operator set.
    again = Master(home, tmp_path / "again.log")
    try:
        addr = again.serving()
        got = corral("get", "roles", "-o", "json", "--master", addr, env_extra=env)
        assert got.returncode == 0, got.stderr
        weights = {r["role"]: r["weight"] for r in json.loads(got.stdout)}
        assert weights.get("web") == 3, got.stdout
    finally:
        again.stop()


def test_a_master_without_a_registry_is_an_explicit_choice_with_a_warning(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    master = Master(home, tmp_path / "memory.log", "--registry", "memory")
    try:
        master.serving()
        assert master.logged("registry_in_memory")["level"] == "warning"
        assert str(master.logged("master_started")["registry"]).startswith("memory")
        assert not (home / "master").exists()  # nothing written to the default work dir
    finally:
        master.stop()
    # --zk keeps the registry in ZooKeeper: a --registry beside it is a usage error.
    done = corral(
        *("master", "--zk", "zk://127.0.0.1:2181/c", "--registry", "memory"),
        env_extra={"CORRAL_HOME": str(home)},
    )
    assert done.returncode == 2 and "drop --registry" in done.stderr, done.stderr
