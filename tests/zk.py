"""A real ZooKeeper for the tests that need one (Debian's ``zookeeper`` package).

``zookeeper`` is a fixture: a standalone server on a free loopback port, stopped after the test.
Where the package is missing the tests are skipped with the reason, except in CI (``CI`` set),
where `.ci/run` installs it and a missing server is a failure, never a silent skip.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from corral.loadtest.zookeeper import LocalZooKeeper, installed


def local_zookeeper(directory: Path) -> Iterator[LocalZooKeeper]:
    missing = installed()
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"ZooKeeper is needed in CI and {missing}")
        pytest.skip(f"needs a real ZooKeeper: {missing}")
    server = LocalZooKeeper(directory / "zookeeper").start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def zookeeper(tmp_path: Path) -> Iterator[LocalZooKeeper]:
    yield from local_zookeeper(tmp_path)
