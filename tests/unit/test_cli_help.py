"""Every argument of every `corral` command says what it is in --help (a newcomer meets the CLI
through it), the frameworks' own flags included."""

from __future__ import annotations

import argparse

from corral.cli.main import build_parser


def _parsers(
    parser: argparse.ArgumentParser, path: str
) -> list[tuple[str, argparse.ArgumentParser]]:
    found = [(path, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _parsers(sub, f"{path} {name}")
    return found


def test_every_argument_has_help() -> None:
    missing = [
        f"{path}: {'/'.join(a.option_strings) or a.dest}"
        for path, parser in _parsers(build_parser(), "corral")
        for a in parser._actions
        if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction)) and not a.help
    ]
    assert missing == []
