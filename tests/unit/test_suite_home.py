"""The suite keeps away from the home directory of whoever runs it (tests/conftest.py): every
test process and every process a test starts gets a HOME, CORRAL_HOME and XDG folders of the
session's own, and a session that leaves anything in that HOME fails, naming it, while the real
home stays untouched."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
from pathlib import Path

from corral.cli import contexts
from corral.frameworks.sdk import tls as sdk_tls

CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"
INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"


def test_this_process_and_its_children_use_the_sessions_folders() -> None:
    real_home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    session = Path(os.environ["CORRAL_TESTS_DIR"])
    for name in ("HOME", "CORRAL_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"):
        assert Path(os.environ[name]).is_relative_to(session), (name, os.environ[name])
    assert not session.is_relative_to(real_home)
    assert sdk_tls.home() == Path(os.environ["CORRAL_HOME"])
    assert contexts.config_path() == sdk_tls.home() / "config.json"
    child = subprocess.run(
        [sys.executable, "-c", "import pathlib; print(pathlib.Path.home())"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert child.stdout.strip() == os.environ["HOME"]


def _inner_pytest(tmp_path: Path, test_body: str, *args: str) -> tuple[int, str, Path, Path]:
    """A pytest session of its own over one test, with this suite's conftest, run as a user
    would run it: HOME is the user's (a folder here), nothing of this session inherited.
    Returns (exit status, output, that user's home, the folder sessions' temporary dirs go)."""
    project = tmp_path / "project"
    (project / "tests").mkdir(parents=True)
    shutil.copy(CONFTEST, project / "tests" / "conftest.py")
    (project / "pytest.ini").write_text(INI)
    (project / "tests" / "test_inner.py").write_text(test_body)
    user_home, tmp = tmp_path / "user-home", tmp_path / "tmp"
    user_home.mkdir()
    tmp.mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST_", "CORRAL_", "XDG_", "COV_"))
    }
    env.update(HOME=str(user_home), TMPDIR=str(tmp), CORRAL_MASTER="prod:5050")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args, "tests"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.returncode, done.stdout + done.stderr, user_home, tmp


WRITES_CORRAL_HOME = """
import os, pathlib, subprocess, sys

def test_keeps_its_files_where_it_is_told() -> None:
    assert "CORRAL_MASTER" not in os.environ  # the user's master is not the tests'
    home = pathlib.Path(os.environ["CORRAL_HOME"])
    (home / "tls").mkdir()
    subprocess.run([sys.executable, "-c", "import os; open(os.environ['CORRAL_HOME'] + '/x', 'w')"],
                   check=True)
    assert (home / "x").exists()
"""

WRITES_HOME = """
import subprocess, sys

def test_reaches_past_corral_home() -> None:
    # A process the test starts, as a master or a CLI would be, writing ~/.corral itself.
    program = "import pathlib; (pathlib.Path.home() / '.corral').mkdir()"
    subprocess.run([sys.executable, "-c", program], check=True)
"""


def test_a_session_that_keeps_to_its_folders_passes_and_leaves_nothing(tmp_path: Path) -> None:
    status, output, user_home, tmp = _inner_pytest(tmp_path, WRITES_CORRAL_HOME)
    assert status == 0, output
    assert list(user_home.iterdir()) == []
    assert list(tmp.glob("corral-tests-*")) == [], "the session's folders go when it passes"


def test_a_session_that_writes_in_home_fails_and_the_users_home_stays_empty(
    tmp_path: Path,
) -> None:
    # With two xdist workers: the workers' own folders are checked too.
    status, output, user_home, tmp = _inner_pytest(tmp_path, WRITES_HOME, "-n", "2")
    assert status == 1, output
    assert "1 passed" in output, output
    assert "files left in HOME" in output, output
    assert "/home/.corral" in output, output
    assert list(user_home.iterdir()) == []
    (kept,) = tmp.glob("corral-tests-*")  # kept for a look
    assert list(kept.glob("gw*/home/.corral")), list(kept.rglob("*"))
