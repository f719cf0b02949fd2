"""The whole suite runs away from the home directory of whoever runs it.

Before anything is collected, each pytest process (the controller and every xdist worker) points
``HOME``, ``CORRAL_HOME`` and the XDG base directories at folders of its own under one new
temporary directory, so every master, agent, framework and CLI the tests start inherits them:

- ``CORRAL_HOME``: the local CA and operator credential a master started with no TLS flags
  makes, and the CLI's contexts file, as ``~/.corral`` holds them for a user;
- ``XDG_STATE_HOME`` (the serving service's default store), ``XDG_CONFIG_HOME``,
  ``XDG_CACHE_HOME`` (pip's cache) and ``XDG_DATA_HOME``; ``RUSTUP_HOME`` (pip runs
  ``rustc --version`` for its user agent, and rustup's ``rustc`` writes its settings there);
- ``HOME``: a new empty folder, as on a machine where Corral never ran. Nothing the tests do may
  need anything there, and nothing may be left there: code that reached past ``CORRAL_HOME`` to
  ``~/.corral`` (or a tool that keeps files beside it) would, for a user, read or write their
  own home. At the end of the session the controller fails the run, naming what it found, if
  any process's ``HOME`` is not empty.

The settings that tell a client where its master and its credential are (``CORRAL_MASTER``,
``CORRAL_CONFIG``, ``CORRAL_TLS_*``, ``CORRAL_INSECURE``) would point the tests at the user's
own cluster: they are removed. The suite's own switches (``CORRAL_COMPOSE_SMOKE``,
``CORRAL_CHAOS``, ...) are kept.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

# The controller's session folder, which its xdist workers (started after pytest_configure)
# inherit, so that one session's folders are checked and removed in one place.
SESSION_DIR_VAR = "CORRAL_TESTS_DIR"
TOOL_DIRS = {
    "XDG_STATE_HOME": "state",
    "XDG_CONFIG_HOME": "config",
    "XDG_CACHE_HOME": "cache",
    "XDG_DATA_HOME": "data",
    "RUSTUP_HOME": "rustup",
}
USER_SETTINGS = (
    "CORRAL_MASTER",
    "CORRAL_CONFIG",
    "CORRAL_TLS_DIR",
    "CORRAL_TLS_CA",
    "CORRAL_TLS_CERT",
    "CORRAL_TLS_KEY",
    "CORRAL_INSECURE",
)
_OWNS_SESSION_DIR = pytest.StashKey[Path]()


def pytest_configure(config: pytest.Config) -> None:
    # xdist gives its workers (and only them) their input; a pytest a test starts inherits
    # PYTEST_XDIST_WORKER but is a session of its own.
    workerinput = getattr(config, "workerinput", None)
    worker = workerinput["workerid"] if workerinput else None
    inherited = os.environ.get(SESSION_DIR_VAR)
    if worker and inherited:
        session_dir = Path(inherited)
    else:
        session_dir = Path(tempfile.mkdtemp(prefix="corral-tests-"))
        os.environ[SESSION_DIR_VAR] = str(session_dir)
        config.stash[_OWNS_SESSION_DIR] = session_dir
    own = session_dir / (worker or "controller")
    for name in USER_SETTINGS:
        os.environ.pop(name, None)
    os.environ["HOME"] = str(_made(own / "home"))
    os.environ["CORRAL_HOME"] = str(_made(own / "corral"))
    for name, folder in TOOL_DIRS.items():
        os.environ[name] = str(_made(own / folder))


def _made(path: Path) -> Path:
    path.mkdir(parents=True, mode=0o700)
    return path


def left_in_homes(session_dir: Path) -> list[Path]:
    """Everything any process of the session left in its HOME."""
    return sorted(p for home in session_dir.glob("*/home") for p in home.rglob("*"))


@pytest.hookimpl(trylast=True)  # after xdist has stopped its workers
def pytest_sessionfinish(session: pytest.Session) -> None:
    session_dir = session.config.stash.get(_OWNS_SESSION_DIR, None)
    if session_dir is None:
        return
    left = left_in_homes(session_dir)
    if not left:
        shutil.rmtree(session_dir, ignore_errors=True)
        return
    shown = "\n".join(f"  {p}" for p in left[:20]) + ("\n  ..." if len(left) > 20 else "")
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    message = (
        f"the tests left files in their HOME (for a user, their own home directory); "
        f"HOME must stay empty: CORRAL_HOME, XDG_*_HOME or a test's own folder hold what a "
        f"test keeps. Kept for a look in {session_dir}:\n{shown}"
    )
    if reporter is not None:
        reporter.ensure_newline()
        reporter.write_sep("=", "files left in HOME", red=True)
        reporter.write_line(message)
    else:
        print(message)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
