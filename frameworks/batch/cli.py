"""``corral run batch``: found by the registry (this module's ``FRAMEWORKS``)."""

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
    from corral.frameworks.batch.job import JobSpec

_STAGE_FLAGS = ("cpus", "mem", "gpus", "command", "duration")


def _configure(parser: argparse.ArgumentParser) -> None:
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--tasks", type=positive_int, metavar="N", help="a one-stage job of N tasks")
    what.add_argument(
        "--job", metavar="FILE", help="a job as JSON: stages of tasks (docs/frameworks.md)"
    )
    one = parser.add_argument_group("the tasks of --tasks")
    one.add_argument("--cpus", type=positive_float, help="cpus per task (default 1)")
    one.add_argument("--mem", type=positive_float, help="MiB of memory per task (default 128)")
    one.add_argument(
        "--gpus",
        type=non_negative_float,
        help="GPUs per task (default 0); the framework then asks for agents with GPUs itself",
    )
    one.add_argument("--command", help="what each task runs (sh -c); default: sleep DURATION")
    one.add_argument(
        "--duration",
        type=non_negative_float,
        metavar="SECONDS",
        help="how long each task lasts: on agents started with --simulate, and as the default "
        "command `sleep SECONDS` (default 1)",
    )
    parser.add_argument("--name", help="the job's name (default: the file's, or 'batch')")
    parser.add_argument(
        "--max-cpus",
        type=positive_float,
        metavar="C",
        help="at most C cpus of live tasks at once, like spark.cores.max (default: no limit)",
    )
    parser.add_argument(
        "--max-retries",
        type=non_negative_int,
        metavar="R",
        help="times a failed task is tried again (default 3); a task preempted, evicted or "
        "drained away is tried again without spending one",
    )
    parser.add_argument(
        "--priority-class",
        metavar="CLASS",
        help="the tasks' and demand's priority class (default 'batch': low, preemptible)",
    )
    add_placement_args(parser, "tasks")
    add_image_arg(parser, "tasks")
    parser.add_argument(
        "--revocable",
        action="store_true",
        default=None,
        help="also run on revocable resources (agents started with --revocable lend what "
        "their tasks leave unused); a task whose resources are taken back is retried",
    )
    parser.add_argument(
        "--progress",
        choices=("auto", "bar", "lines", "none"),
        default="auto",
        help="a progress bar on a terminal, log lines otherwise (default auto)",
    )
    parser.add_argument(
        "--give-up-after",
        type=positive_float,
        metavar="SECONDS",
        help="end the job (torn down, exit 1) when tasks have waited this long with none "
        "launched or ended meanwhile, e.g. a task no agent can ever hold (default: wait)",
    )
    parser.add_argument(
        "--keep-running",
        action="store_true",
        help="on SIGINT or SIGTERM, leave the framework and its running tasks to the master "
        "for its failover timeout instead of tearing it down (killing them)",
    )
    parser.add_argument("--json", metavar="FILE", help="also write the summary as JSON here")


def spec_from_args(args: argparse.Namespace) -> JobSpec:
    """The JobSpec the arguments describe (``ValueError`` for a bad one: exit 2)."""
    from corral.frameworks.batch.job import JobSpec, Stage

    tolerations, constraints = placement_from_args(args)
    overrides = {
        "name": args.name,
        "max_cpus": args.max_cpus,
        "max_retries": args.max_retries,
        "priority_class": args.priority_class,
        "revocable": args.revocable,
        "tolerations": tolerations or None,  # None: the job file's (flags add nothing)
        "constraints": constraints or None,
        "image": args.image,
    }
    if args.job is not None:
        given = [f"--{f}" for f in _STAGE_FLAGS if getattr(args, f) is not None]
        if given:
            raise ValueError(f"{', '.join(given)} describe --tasks; a --job file has its stages")
        return JobSpec.load(args.job, **overrides)
    duration = args.duration
    if duration is None and args.command is None:
        duration = 1.0
    stage = Stage(
        "tasks",
        args.tasks,
        cpus=1.0 if args.cpus is None else args.cpus,
        mem=128.0 if args.mem is None else args.mem,
        gpus=0.0 if args.gpus is None else args.gpus,
        command=args.command or "",
        duration=duration,
    )
    values = {k: v for k, v in overrides.items() if v is not None}
    return JobSpec(**{"name": "batch", **values}, stages=(stage,))


def _run(args: argparse.Namespace) -> int:
    import asyncio

    from corral.frameworks.batch import run

    spec = spec_from_args(args)
    return asyncio.run(
        run.main(
            spec,
            args.master,
            args.role,
            args.connect_timeout,
            progress=args.progress,
            json_out=args.json,
            keep_running=args.keep_running,
            give_up_after=args.give_up_after,
        )
    )


FRAMEWORKS = [
    FrameworkCommand(
        name="batch",
        help="a Spark-like job: stages of many short tasks, binpacked, low priority, retried",
        description="Run a job of stages of many short tasks at low priority (class 'batch'), "
        "binpacked onto the fullest agents; failed tasks are retried up to --max-retries times, "
        "preempted, evicted or drained ones always. While tasks "
        "wait, the master's reason is shown. SIGINT or SIGTERM tears the job down (its running "
        "tasks are killed) and prints the summary. Exit 0 when every task succeeded, 1 "
        "otherwise.",
        configure=_configure,
        run=_run,
    )
]
