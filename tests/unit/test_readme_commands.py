"""Every `corral ...` command shown in the README parses with the real CLI (flags exist)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from corral.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[2]


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```sh\n(.*?)```", text, flags=re.S)
    commands = []
    for block in blocks:
        joined = block.replace("\\\n", " ")
        for line in joined.splitlines():
            line = line.split("#", 1)[0].strip()
            if line.startswith("corral "):
                commands.append(line)
    return commands


def test_readme_shows_commands() -> None:
    assert len(readme_commands()) >= 8


@pytest.mark.parametrize("command", readme_commands())
def test_readme_command_parses(command: str) -> None:
    args = build_parser().parse_args(shlex.split(command)[1:])
    assert callable(args.func)
