"""``corral bench allocator``: the allocator benchmark (master/allocator/bench.py) with a
progress bar, a table and optional JSON."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from corral.cli.common import positive_float, positive_int
from corral.cli.errors import CliError


def _sizes(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a list of integers") from None
    if not values or any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(f"{text!r}: sizes must be positive integers")
    return values


_ALLOCATOR_HELP = (
    "the allocator's walks: compiled with numba (the default) or run as Python (numpy)"
)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("bench", help="run a benchmark")
    what = parser.add_subparsers(dest="what", metavar="WHAT", required=True)
    alloc = what.add_parser(
        "allocator", help="DRF allocator, Mesos DeclineOffers shape, numpy vs reference"
    )
    alloc.add_argument("--agents", type=_sizes, default=[1000, 10000], help="e.g. 1000,10000")
    alloc.add_argument("--frameworks", type=_sizes, default=[1, 100, 1000], help="e.g. 1,100")
    alloc.add_argument(
        "--roles",
        type=_sizes,
        default=[1],
        help="frameworks spread over N weighted roles r0..r{N-1} (1: all in '*'); e.g. 1,10",
    )
    alloc.add_argument(
        "--quota",
        action="store_true",
        help="the first role is guaranteed 10%% of the cluster's cpus and limited to 20%%",
    )
    alloc.add_argument("--cycles", type=positive_int, default=5, help="cycles per phase (5)")
    alloc.add_argument(
        "--budget",
        type=positive_float,
        default=200.0,
        metavar="CPUS",
        help="cpus a paced cycle may offer (a paced master's launch window; default 200)",
    )
    alloc.add_argument(
        "--reference-max-agents",
        type=int,
        default=10000,
        metavar="N",
        help="time the pure-Python reference only up to N agents (slow; default 10000)",
    )
    alloc.add_argument(
        "--reference-cycles",
        type=positive_int,
        default=2,
        metavar="N",
        help="cycles of the reference per shape (default 2)",
    )
    alloc.add_argument(
        "--memory-shape",
        default="50000x1000",
        metavar="AxF",
        help="agents x frameworks whose allocator memory is measured (default 50000x1000)",
    )
    alloc.add_argument("--json", type=Path, metavar="FILE", help="also write the figures here")
    alloc.add_argument("--seed", type=int, default=1, help="the cycles' seed (default 1)")
    alloc.add_argument(
        "--kernel",
        choices=("numba", "numpy"),
        default="numba",
        help="the numpy allocator's walks: compiled with numba (the master's default) or run "
        "as Python (numpy)",
    )
    alloc.set_defaults(func=run, needs_server=True)

    _steps_parser(
        what.add_parser(
            "offers",
            help="the master's CPU per offer in the decline loop (tick, encode, decline), "
            "no network",
        ),
        run_offers,
        agents=10000,
        frameworks=100,
    )
    _steps_parser(
        what.add_parser(
            "launches",
            help="the master's CPU per launched task (offer, accept, statuses, "
            "acknowledgements), no network",
        ),
        run_launches,
        agents=1000,
        frameworks=50,
    )

    dem = what.add_parser(
        "demands",
        help="the master's allocation tick with pending demands, gangs among them (no network)",
    )
    dem.add_argument("--agents", type=positive_int, default=10000, help="agents (10000)")
    dem.add_argument("--demands", type=positive_int, default=1000, help="pending demands (1000)")
    dem.add_argument("--gangs", type=int, default=100, help="of them gangs of 8 (100)")
    dem.add_argument("--ticks", type=positive_int, default=20, help="measured ticks per phase")
    dem.add_argument(
        "--hostile",
        type=positive_int,
        metavar="FRAMEWORKS",
        help="instead: FRAMEWORKS hostile frameworks, each with --demands demands that fit "
        "nowhere and all of different shapes, beside running tasks preemption cannot clear "
        "(master/bench/demands_hostile.py)",
    )
    dem.add_argument(
        "--allocator", choices=("numba", "numpy"), default="numba", help=_ALLOCATOR_HELP
    )
    dem.add_argument("--json", type=Path, metavar="FILE", help="also write the figures here")
    dem.set_defaults(func=run_demands, needs_server=True)

    from corral.cli import bench_autoscaler, bench_jobs

    bench_jobs.register(what)
    bench_autoscaler.register(what)


def _run_hostile(args: argparse.Namespace) -> int:
    from rich.console import Console

    from corral.gc_tuning import tuned_gc
    from corral.master.bench import demands_hostile as demand_bench_hostile

    console = Console()
    shape = f"{args.agents} agents, {args.hostile} x {args.demands} demands that fit nowhere"
    with tuned_gc(), console.status(shape):
        result = demand_bench_hostile.run(
            args.agents, args.hostile, args.demands, args.ticks, time.process_time, args.allocator
        )
    console.print(
        f"{shape}: allocation tick {result.tick_median_ms:.1f} ms median, "
        f"{result.tick_max_ms:.1f} ms max (the why-pending scan's tick); state view "
        f"{result.state_median_ms:.1f} ms; an unrelated framework offered at least "
        f"{result.offered_unrelated_min} offers a tick (process time, {result.ticks} ticks)"
    )
    if args.json:
        args.json.write_text(json.dumps(result.as_dict(), indent=2) + "\n")
    return 0


def run(args: argparse.Namespace) -> int:
    from corral.gc_tuning import tuned_gc

    # The master's collector settings: the cycle is timed as the master runs it.
    with tuned_gc():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table

    from corral.master.allocator import bench

    try:
        mem_agents, mem_frameworks = (int(x) for x in args.memory_shape.lower().split("x"))
    except ValueError:
        raise CliError(f"--memory-shape {args.memory_shape!r} must look like 50000x1000") from None
    console = Console()
    shapes = [(a, f, r) for a in args.agents for f in args.frameworks for r in args.roles]
    results: list[bench.ShapeResult] = []
    with Progress(console=console, transient=True) as progress:
        total = len(shapes) * 3 * args.cycles + 1
        task = progress.add_task("allocator benchmark", total=total)
        for agents, frameworks, roles in shapes:
            progress.update(
                task, description=f"{agents} agents x {frameworks} frameworks, {roles} roles"
            )
            results.append(
                bench.run_shape(
                    agents,
                    frameworks,
                    args.cycles,
                    args.seed,
                    args.reference_max_agents,
                    args.reference_cycles,
                    time.perf_counter,
                    lambda: progress.advance(task),
                    kernel=args.kernel,
                    roles=roles,
                    quota=args.quota,
                    budget=args.budget,
                )
            )
        memory = next(
            (
                r.state_bytes
                for r in results
                if (r.agents, r.frameworks, r.roles) == (mem_agents, mem_frameworks, 1)
            ),
            None,
        )
        if memory is None:
            progress.update(task, description=f"memory at {mem_agents} x {mem_frameworks}")
            memory = bench.memory_at(mem_agents, mem_frameworks, args.kernel)
        progress.advance(task)

    table = Table(
        title=f"allocator cycle time, ms ({args.cycles} cycles per phase, {args.kernel} kernel)"
    )
    for col in (
        "agents",
        "frameworks",
        "roles",
        "quota",
        "median",
        "p99",
        "offer cycle",
        "offers",
        f"paced ({args.budget:g} cpus)",
        "reference",
        "speedup",
        "agree",
    ):
        table.add_column(col, justify="right")
    for r in results:
        table.add_row(
            str(r.agents),
            str(r.frameworks),
            str(r.roles),
            "yes" if r.quota else "no",
            f"{r.median_ms:.2f}",
            f"{r.p99_ms:.2f}",
            f"{r.offer_median_ms:.1f}",
            f"{r.offers_per_offer_cycle:.0f}",
            f"{r.paced_median_ms:.2f}",
            "skipped" if r.reference_median_ms is None else f"{r.reference_median_ms:.1f}",
            "-" if r.speedup is None else f"{r.speedup:.0f}x",
            "-" if r.agree is None else ("yes" if r.agree else "NO"),
        )
    console.print(table)
    console.print(
        f"allocator state at {mem_agents} agents x {mem_frameworks} frameworks: "
        f"{memory / 2**20:.1f} MiB of arrays"
    )
    if args.json:
        doc = {
            "shape": "Mesos DeclineOffers: agents cpus:24;mem:4096;disk:4096, "
            "cpus:16;mem:2014;disk:1024 in use, every offer declined with a long filter",
            "median_ms": "per-cycle time once every framework has filtered every agent",
            "offer_median_ms": "per-cycle time of the first cycles, every agent offered",
            "paced_median_ms": f"per-cycle time with a budget of {args.budget:g} cpus (a paced "
            "master's cycle), on an allocator of its own as the agents registered it",
            "roles": "frameworks spread round-robin over N roles r0.. with weights 1 + i % 3",
            "quota": "the first role guaranteed 10% of the cluster's cpus, limited to 20%",
            "cycles": args.cycles,
            "kernel": args.kernel,
            "seed": args.seed,
            "reference": f"run on min(cycles, {args.reference_cycles}) cycles per phase, "
            f"skipped above {args.reference_max_agents} agents",
            "results": [r.as_dict() for r in results],
            "memory": {"agents": mem_agents, "frameworks": mem_frameworks, "bytes": memory},
        }
        args.json.write_text(json.dumps(doc, indent=2) + "\n")
    return 0 if all(r.agree is not False for r in results) else 1


def _steps_parser(
    parser: argparse.ArgumentParser, func: Any, *, agents: int, frameworks: int
) -> None:
    """The flags of a per-unit benchmark (offers, launches)."""
    parser.add_argument("--agents", type=positive_int, default=agents, help=f"agents ({agents})")
    parser.add_argument(
        "--frameworks", type=positive_int, default=frameworks, help=f"frameworks ({frameworks})"
    )
    parser.add_argument("--rounds", type=positive_int, default=5, help="measured rounds (5)")
    parser.add_argument(
        "--allocator", choices=("numba", "numpy"), default="numba", help=_ALLOCATOR_HELP
    )
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the figures here")
    parser.set_defaults(func=func, needs_server=True)


def run_offers(args: argparse.Namespace) -> int:
    from corral.master.bench import offers as offer_bench

    return _run_steps(args, offer_bench.run, offer_bench.STEPS, "offer", "offers")


def run_launches(args: argparse.Namespace) -> int:
    from corral.master.bench import launches as launch_bench

    return _run_steps(args, launch_bench.run, launch_bench.STEPS, "launched task", "tasks")


def _run_steps(
    args: argparse.Namespace, bench: Any, steps: tuple[str, ...], per: str, units: str
) -> int:
    """A per-unit benchmark (offer_bench, launch_bench): its steps' µs per unit as a table."""
    from rich.console import Console
    from rich.table import Table

    from corral.gc_tuning import tuned_gc
    from corral.master.bench.step_costs import StepCosts

    console = Console()
    with tuned_gc(), console.status(f"{args.agents} agents x {args.frameworks} frameworks"):
        result: StepCosts = bench(
            args.agents, args.frameworks, args.rounds, time.process_time, args.allocator
        )
    table = Table(
        title=f"master CPU per {per}, µs (process time; median of {result.rounds} rounds of "
        f"{result.per_round:,.0f} {units})"
    )
    for step in (*steps, "total"):
        table.add_column(step, justify="right")
    costs = result.us_per_unit
    table.add_row(*(f"{costs[s]:.2f}" for s in steps), f"{sum(costs.values()):.2f}")
    console.print(table)
    if args.json:
        args.json.write_text(json.dumps(result.as_dict(), indent=2) + "\n")
    return 0


def run_demands(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from corral.gc_tuning import tuned_gc
    from corral.master.bench import demands as demand_bench

    if args.hostile:
        return _run_hostile(args)
    if not 0 <= args.gangs <= args.demands:
        raise CliError(f"--gangs must be between 0 and --demands ({args.demands})")
    console = Console()
    with (
        tuned_gc(),
        console.status(f"{args.agents} agents, {args.demands} demands ({args.gangs} gangs)"),
    ):
        result = demand_bench.run(
            args.agents, args.demands, args.gangs, args.ticks, time.process_time, args.allocator
        )
    table = Table(
        title=f"allocation tick, ms ({args.agents} agents, {args.demands} pending demands, "
        f"{args.gangs} gangs of 8; process time, median of {result.ticks} ticks per phase)"
    )
    for col in ("phase", "median", "p99"):
        table.add_column(col, justify="right")
    for phase in demand_bench.PHASES:
        table.add_row(phase, f"{result.median_ms[phase]:.2f}", f"{result.p99_ms[phase]:.2f}")
    console.print(table)
    console.print(f"bundles cut per cutting tick: {result.bundles_per_cutting_tick:.0f}")
    if args.json:
        args.json.write_text(json.dumps(result.as_dict(), indent=2) + "\n")
    return 0
