"""The built wheel, installed as users install it: one `corral` namespace, an SDK-only base.

Builds the wheel once, installs it into fresh virtual environments (dependencies come from the
package index, or pip's cache), and runs the installed `corral` from a folder outside the
checkout, so nothing is imported from the repository by accident.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from corral import extras

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
_CACHES = shutil.ignore_patterns("__pycache__", "*.pyc")


def _run(*cmd: str | Path, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(c) for c in cmd], cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


def _ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, f"{result.args} exited {result.returncode}:\n{result.stderr}"
    return result.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # Built from a copy, links kept as links, so setuptools' build/ folder lands outside the
    # checkout and the wheel can only contain what these files make.
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    for name in ("corral", "master", "agent", "frameworks"):
        shutil.copytree(ROOT / name, src / name, symlinks=True, ignore=_CACHES)
    out = tmp_path_factory.mktemp("dist")
    _ok(_run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", out, src, cwd=out))
    (found,) = out.glob("corral-*.whl")
    return found


def _venv(path: Path, wheel: Path, spec: str = "") -> Path:
    # The venv gets no pip of its own (ensurepip alone takes 5-10 s): this interpreter's pip
    # installs into it (--python), as it would with the venv's own.
    _ok(_run(sys.executable, "-m", "venv", "--without-pip", path, cwd=path.parent))
    py = path / "bin" / "python"
    install = ("install", "-q", f"{wheel}{spec}")
    _ok(_run(sys.executable, "-m", "pip", "--python", py, *install, cwd=path.parent))
    return py


@pytest.fixture(scope="module")
def base_env(tmp_path_factory: pytest.TempPathFactory, wheel: Path) -> Iterator[Path]:
    yield _venv(tmp_path_factory.mktemp("base") / "venv", wheel)


def test_wheel_holds_one_namespace_and_every_module(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    assert tops == {"corral", wheel.name.split("-py")[0] + ".dist-info"}, tops
    # corral/master, corral/agent and corral/frameworks are links: walking through them gives
    # each module's installed path.
    expected = {
        (Path(folder) / name).relative_to(ROOT).as_posix()
        for folder, _, files in os.walk(ROOT / "corral", followlinks=True)
        for name in files
        if name.endswith(".py")
    }
    assert "corral/master/core/master.py" in expected
    missing = expected - set(names)
    assert not missing, f"modules left out of the wheel: {sorted(missing)[:10]}"


def test_wheel_holds_the_web_ui_and_its_libraries_licenses(wheel: Path) -> None:
    """The master serves its page from the installed package (docs/ui.md): every static file
    in the checkout is in the wheel, the vendored libraries with their licenses."""
    names = set(zipfile.ZipFile(wheel).namelist())
    static = ROOT / "master" / "ui" / "static"
    expected = {
        "corral/master/ui/static/" + path.relative_to(static).as_posix()
        for path in static.rglob("*")
        if path.is_file()
    }
    for needed in ("index.html", "js/app.js", "vendor/preact/LICENSE", "vendor/uplot/LICENSE"):
        assert f"corral/master/ui/static/{needed}" in expected, needed
    missing = expected - names
    assert not missing, f"web UI files left out of the wheel: {sorted(missing)[:10]}"


def test_base_install_puts_only_corral_in_site_packages(base_env: Path) -> None:
    record = _ok(
        _run(
            base_env,
            "-c",
            "import importlib.metadata as m; print('\\n'.join(map(str, m.files('corral'))))",
            cwd=base_env.parent,
        )
    ).split()
    tops = {Path(f).parts[0] for f in record}
    assert tops <= {"corral", "corral-0.1.0.dist-info", "..", "__pycache__"}, tops
    assert "corral" in tops
    for name in ("master", "agent", "frameworks"):
        result = _run(base_env, "-c", f"import {name}", cwd=base_env.parent)
        assert result.returncode != 0, f"`import {name}` found something after installing corral"


def test_base_install_runs_the_sdk_and_client_commands(base_env: Path) -> None:
    here = base_env.parent
    _ok(_run(base_env, "-c", "from corral.frameworks import sdk; sdk.Driver", cwd=here))
    corral = base_env.parent / "corral"
    assert "get" in _ok(_run(corral, "--help", cwd=here))
    absent = _run(base_env, "-c", "import numpy", cwd=here)
    assert absent.returncode != 0, "the base install pulled in numpy"


@pytest.mark.parametrize("command", ["master", "agent", "demo", "loadtest", "bench allocator"])
def test_server_commands_name_the_extra_without_it(base_env: Path, command: str) -> None:
    result = _run(base_env.parent / "corral", *command.split(), cwd=base_env.parent)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "pip install 'corral[server]'" in lines[0], lines[0]


def test_server_modules_match_the_server_extra() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    dists = [re.split(r"[<>=!~\[; ]", d)[0] for d in project["optional-dependencies"]["server"]]
    import_names = {
        "pyyaml": "yaml",
        "dnspython": "dns",
    }  # distributions whose import name is another
    assert [import_names.get(d, d.replace("-", "_")) for d in dists] == list(extras.SERVER_MODULES)


def test_server_install_runs_the_demo_from_any_folder(
    tmp_path: Path, wheel: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    py = _venv(tmp_path_factory.mktemp("server") / "venv", wheel, "[server]")
    away = tmp_path / "elsewhere"
    away.mkdir()
    result = _run(
        py.parent / "corral",
        "demo",
        "--duration",
        "12",
        "--grpc",
        "127.0.0.1:0",
        "--http",
        "127.0.0.1:0",
        "--work-dir",
        tmp_path / "work",
        cwd=away,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"Summary: 4 agents, \d+ framework runs, \d+ tasks: .*FINISHED", result.stdout)
