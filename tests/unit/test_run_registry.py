"""`corral run` finds frameworks without a central list: packages under corral.frameworks with
a `cli` module, and the `corral.frameworks` entry points of installed packages."""

from __future__ import annotations

import argparse
import importlib.metadata
import re
from typing import Any

import pytest

from corral.cli.main import main
from corral.frameworks import registry

seen: list[argparse.Namespace] = []


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--colour", default="blue")


def _run(args: argparse.Namespace) -> int:
    seen.append(args)
    return 3


PLUGIN = registry.FrameworkCommand("plugin", "a framework from somewhere else", _configure, _run)
CLASH = registry.FrameworkCommand("hello", "not the tutorial", _configure, _run)


class _EntryPoint:
    def __init__(self, name: str, value: str, loaded: object) -> None:
        self.name, self.value, self._loaded = name, value, loaded

    def load(self) -> object:
        if isinstance(self._loaded, Exception):
            raise self._loaded
        return self._loaded


@pytest.fixture
def plugins(monkeypatch: pytest.MonkeyPatch) -> list[_EntryPoint]:
    eps: list[_EntryPoint] = []

    def entry_points(**kw: Any) -> list[_EntryPoint]:
        assert kw == {"group": "corral.frameworks"}
        return eps

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    return eps


def test_the_in_tree_frameworks_are_found_by_their_packages() -> None:
    found = registry.discover()
    assert {"hello", "batch"} <= set(found)
    assert found["hello"].origin == "corral.frameworks.examples.cli"
    assert found["batch"].origin == "corral.frameworks.batch.cli"
    assert "loadtest" not in found and "sdk" not in found  # no `cli` module / a library


def test_list_names_every_framework_with_its_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    names = [line.split()[0] for line in lines]
    assert names == sorted(names) and {"hello", "batch"} <= set(names)
    assert any(line.startswith("hello") and "tutorial" in line for line in lines)


def test_an_unknown_name_exits_2_naming_the_known_ones(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["run", "nosuch"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "nosuch" in err and "'hello'" in err and "'batch'" in err


def test_no_name_and_no_list_exits_2_naming_the_known_ones(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["run"])
    assert exited.value.code == 2
    assert "known: batch, gang, hello" in capsys.readouterr().err


def test_an_entry_point_adds_a_framework(
    plugins: list[_EntryPoint], capsys: pytest.CaptureFixture[str]
) -> None:
    plugins.append(_EntryPoint("plugin", "somewhere:PLUGIN", PLUGIN))
    assert main(["run", "--list"]) == 0
    # Names are padded to the longest (serving): match the line whatever the padding.
    assert re.search(r"^plugin +a framework from somewhere else$", capsys.readouterr().out, re.M)
    seen.clear()
    assert main(["run", "plugin", "--colour", "red", "--master", "10.0.0.1:5050"]) == 3
    assert (seen[0].colour, seen[0].master, seen[0].role) == ("red", "10.0.0.1:5050", "*")


def test_broken_or_clashing_entry_points_are_reported_and_ignored(
    plugins: list[_EntryPoint], capsys: pytest.CaptureFixture[str]
) -> None:
    plugins += [
        _EntryPoint("broken", "gone:X", ImportError("No module named 'gone'")),
        _EntryPoint("odd", "odd:X", 42),
        _EntryPoint("hello", "other:CLASH", [CLASH]),
    ]
    found = registry.discover()
    assert found["hello"].origin == "corral.frameworks.examples.cli"
    assert "broken" not in found and "odd" not in found
    err = capsys.readouterr().err
    assert "ignoring framework entry point broken = gone:X: No module named 'gone'" in err
    assert "42 is not a FrameworkCommand" in err
    assert "'hello' of entry point hello = other:CLASH: the name is taken" in err
