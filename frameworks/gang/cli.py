"""``corral run gang``: found by the registry (this module's ``FRAMEWORKS``)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from corral.frameworks.placement_args import add_image_arg, add_placement_args, placement_from_args
from corral.frameworks.registry import FrameworkCommand
from corral.frameworks.sdk.argtypes import (
    non_negative_float,
    non_negative_int,
    positive_float,
    positive_int,
)

if TYPE_CHECKING:
    from corral.frameworks.gang.spec import TrainSpec


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--workers",
        type=positive_int,
        required=True,
        metavar="N",
        help="members of the gang: all start together or none does",
    )
    parser.add_argument(
        "--steps",
        type=non_negative_int,
        required=True,
        metavar="S",
        help="training steps (GANG_STEPS)",
    )
    parser.add_argument(
        "--gpus-per-worker",
        type=non_negative_float,
        default=0.0,
        metavar="G",
        help="GPUs per worker (default 0); the framework then asks for agents with GPUs itself",
    )
    parser.add_argument(
        "--cpus-per-worker",
        type=positive_float,
        default=1.0,
        metavar="C",
        help="cpus per worker (default 1)",
    )
    parser.add_argument(
        "--mem-per-worker",
        type=positive_float,
        default=256.0,
        metavar="MIB",
        help="MiB of memory per worker (default 256)",
    )
    parser.add_argument(
        "--checkpoint-dir",
        metavar="DIR",
        help="where rank 0 writes checkpoints and the result; every worker must reach it "
        "(default: a new temporary directory, fine when the agents share this machine)",
    )
    parser.add_argument(
        "--checkpoint-every",
        type=positive_int,
        default=50,
        metavar="K",
        help="rank 0 checkpoints every K steps (default 50)",
    )
    parser.add_argument(
        "--max-restarts",
        type=non_negative_int,
        default=3,
        metavar="R",
        help="times a failed gang is relaunched before giving up (default 3)",
    )
    parser.add_argument(
        "--priority-class",
        default="",
        metavar="CLASS",
        help="the demand's and workers' priority class (default: the cluster's)",
    )
    parser.add_argument(
        "--command",
        default="",
        help="what each worker runs (sh -c) instead of the numpy trainer; it gets RANK, "
        "WORLD_SIZE, MASTER_ADDR, MASTER_PORT and GANG_* (docs/frameworks.md)",
    )
    add_placement_args(parser, "workers")
    add_image_arg(parser, "workers")
    parser.add_argument("--name", default="train", help="the gang's name (default 'train')")
    parser.add_argument(
        "--seed", type=non_negative_int, default=0, help="the training data's seed (default 0)"
    )
    parser.add_argument(
        "--step-seconds",
        type=non_negative_float,
        default=0.0,
        metavar="SECONDS",
        help="the default worker's minimum time per step, as if it computed that long (default 0)",
    )
    parser.add_argument(
        "--peer-timeout",
        type=positive_float,
        default=30.0,
        metavar="SECONDS",
        help="how long a worker waits for a peer before it gives up (default 30)",
    )
    parser.add_argument(
        "--give-up-after",
        type=positive_float,
        metavar="SECONDS",
        help="end the run (torn down, exit 1) when the gang has waited this long to be placed, "
        "e.g. more GPUs than the cluster has (default: wait)",
    )
    parser.add_argument(
        "--keep-running",
        action="store_true",
        help="on SIGINT or SIGTERM, leave the framework and its workers to the master for its "
        "failover timeout instead of tearing it down (killing them)",
    )
    parser.add_argument("--json", metavar="FILE", help="also write the summary as JSON here")


def spec_from_args(args: argparse.Namespace) -> TrainSpec:
    """The TrainSpec the arguments describe (``ValueError`` for a bad one: exit 2)."""
    import tempfile

    from corral.frameworks.gang.spec import TrainSpec

    tolerations, constraints = placement_from_args(args)
    directory = args.checkpoint_dir or tempfile.mkdtemp(prefix="corral-gang-")
    return TrainSpec(
        workers=args.workers,
        steps=args.steps,
        checkpoint_dir=directory,
        gpus=args.gpus_per_worker,
        cpus=args.cpus_per_worker,
        mem=args.mem_per_worker,
        max_restarts=args.max_restarts,
        checkpoint_every=args.checkpoint_every,
        priority_class=args.priority_class,
        command=args.command,
        name=args.name,
        seed=args.seed,
        step_seconds=args.step_seconds,
        peer_timeout=args.peer_timeout,
        tolerations=tolerations,
        constraints=constraints,
        image=args.image or "",
    )


def _run(args: argparse.Namespace) -> int:
    import asyncio

    from corral.frameworks.gang import run

    spec = spec_from_args(args)
    return asyncio.run(
        run.main(
            spec,
            args.master,
            args.role,
            args.connect_timeout,
            json_out=args.json,
            keep_running=args.keep_running,
            give_up_after=args.give_up_after,
        )
    )


FRAMEWORKS = [
    FrameworkCommand(
        name="gang",
        help="an ML trainer: N workers placed together as one gang, restarted from checkpoints",
        description="Train with N workers that start together (a gang demand: the whole gang "
        "or nothing), each told its RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT. A failed "
        "member restarts the whole gang from the last checkpoint, up to --max-restarts times. "
        "While the gang waits, the master's reason is shown. SIGINT or SIGTERM tears the run "
        "down (its workers are killed) and prints the summary. Exit 0 when training "
        "completed, 1 otherwise.",
        configure=_configure,
        run=_run,
    )
]
