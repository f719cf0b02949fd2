"""``corral run hello``: the tutorial framework (docs/sdk.md), found by the registry."""

from __future__ import annotations

import argparse

from corral.frameworks.registry import FrameworkCommand
from corral.frameworks.sdk.argtypes import positive_int


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tasks",
        type=positive_int,
        default=5,
        metavar="N",
        help="how many tasks to launch (default 5)",
    )


def _run(args: argparse.Namespace) -> int:
    import asyncio

    from corral.frameworks.examples import hello

    return asyncio.run(hello.main(args.master, args.tasks, args.role, args.connect_timeout))


FRAMEWORKS = [
    FrameworkCommand(
        name="hello",
        help="the tutorial framework: N tasks echo hello; exit 0 when all FINISHED",
        description="Launch N small `echo hello` tasks, wait until all end, print a summary. "
        "Exit 0 when every task FINISHED, 1 otherwise.",
        configure=_configure,
        run=_run,
    )
]
