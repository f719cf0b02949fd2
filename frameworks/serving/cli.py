"""``corral run serving``: found by the registry (this module's ``FRAMEWORKS``)."""

from __future__ import annotations

import argparse

from corral.frameworks.registry import FrameworkCommand
from corral.frameworks.sdk.argtypes import non_negative_int, positive_float


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config", required=True, metavar="FILE", help="the app as JSON (docs/frameworks.md)"
    )
    parser.add_argument(
        "--instances",
        type=non_negative_int,
        metavar="N",
        help="run N instances, over the file's (a later change of the file's count wins)",
    )
    parser.add_argument(
        "--duration",
        type=positive_float,
        metavar="SECONDS",
        help="stop after SECONDS (default: run until SIGINT or SIGTERM)",
    )
    parser.add_argument(
        "--keep-running",
        action="store_true",
        help="at the end, leave the instances running (the master keeps them for the "
        "framework's failover timeout) instead of killing them",
    )


def _run(args: argparse.Namespace) -> int:
    import asyncio
    import dataclasses

    from corral.frameworks.serving import run
    from corral.frameworks.serving.app import AppSpec

    spec = AppSpec.load(args.config)  # AppError is a ValueError: exit 2 with its message
    if args.instances is not None:
        spec = dataclasses.replace(spec, instances=args.instances)
    # --role wins over the file's when given (the registry's default is '*').
    role = args.role if args.role != "*" else spec.role
    return asyncio.run(
        run.main(
            spec,
            args.master,
            role,
            args.connect_timeout,
            config=args.config,
            duration=args.duration,
            teardown=not args.keep_running,
        )
    )


FRAMEWORKS = [
    FrameworkCommand(
        name="serving",
        help="a Marathon-like app: N long-running instances, spread, health-checked, restarted",
        description="Keep an app's instances running (class 'serving' by default): placed by its "
        "constraints and topology spread, health-checked, restarted with backoff after a "
        "failure; a changed --config file scales or rolls them (SIGHUP re-reads it). Runs "
        "until SIGINT/SIGTERM or --duration, then kills its instances.",
        configure=_configure,
        run=_run,
    )
]
