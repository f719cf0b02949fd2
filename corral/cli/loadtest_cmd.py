"""`corral loadtest`: offer throughput and placement rate of a master, measured end to end.

Starts a master (or uses ``--master``), N simulated agents and M load frameworks as processes on
this machine, measures a window after a warm-up, and prints a table; ``--json`` and ``--plot``
write the figures and a chart. The logic lives in ``corral.loadtest``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
from pathlib import Path

from corral import stop_signals
from corral.cli.client_tls import add_tls_args, credentials
from corral.cli.common import host_port, non_negative_float, positive_float, positive_int
from corral.cli.errors import CliError
from corral.master.core.config import default


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "loadtest",
        help="measure offer throughput and placement rate with simulated agents",
        description="Start a master, N simulated agents (cpus:24;mem:4096;disk:4096) and M "
        "load frameworks; measure offers/s, launches/s, latencies and the master's CPU and "
        "memory over --duration seconds after --warmup.",
    )
    p.add_argument(
        "--agents", type=positive_int, default=1000, metavar="N", help="simulated agents (1000)"
    )
    p.add_argument(
        "--frameworks", type=positive_int, default=50, metavar="M", help="load frameworks (50)"
    )
    p.add_argument(
        "--duration",
        type=non_negative_float,
        default=30.0,
        metavar="SECONDS",
        help="how long the figures are measured (default 30)",
    )
    p.add_argument(
        "--warmup",
        type=non_negative_float,
        default=5.0,
        metavar="SECONDS",
        help="how long the load runs before measuring starts (default 5)",
    )
    p.add_argument(
        "--mode",
        choices=("launch", "decline"),
        default="launch",
        help="launch: pack short tasks into offers; decline: decline every offer (refuse 0)",
    )
    p.add_argument(
        "--task-seconds",
        type=non_negative_float,
        default=1.0,
        metavar="X",
        help="simulated task length",
    )
    p.add_argument(
        "--allocation-interval",
        type=non_negative_float,
        default=default("allocation_interval"),
        metavar="SECONDS",
        help="the master's seconds between allocation cycles (corral master "
        f"--allocation-interval; default {default('allocation_interval'):g})",
    )
    p.add_argument(
        "--launch-pacing",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="the started master's launch pacing (on by default, as on any master; "
        "--no-launch-pacing turns it off; not with --master)",
    )
    p.add_argument(
        "--launch-latency-target",
        type=positive_float,
        default=default("launch_latency_target"),
        metavar="SECONDS",
        help="with launch pacing: the master's accept->RUNNING target "
        f"(default {default('launch_latency_target'):g})",
    )
    p.add_argument(
        "--master",
        type=host_port,
        default=None,
        metavar="HOST:PORT",
        help="use this master instead of starting one",
    )
    p.add_argument(
        "--master-http",
        type=host_port,
        default=None,
        metavar="HOST:PORT",
        help="with --master: its HTTP address, for /metrics (master-side figures)",
    )
    p.add_argument(
        "--masters",
        type=positive_int,
        default=1,
        metavar="N",
        help="start N masters in a ZooKeeper election (a local ZooKeeper from Debian's "
        "zookeeper package is started for them; implies --registry zookeeper)",
    )
    p.add_argument(
        "--registry",
        choices=("memory", "sqlite", "zookeeper"),
        default=None,
        help="where the started masters keep their registry (default memory; zookeeper with "
        "--masters > 1)",
    )
    p.add_argument(
        "--zk-session-timeout",
        type=positive_float,
        default=2.0,
        metavar="S",
        help="the started masters' ZooKeeper session: a dead leader is replaced this long "
        "after (1 to 10 s; default 2)",
    )
    p.add_argument(
        "--kill-leader-at",
        type=positive_float,
        default=None,
        metavar="S",
        help="kill -9 the leading master S seconds after the frameworks start, and print the "
        "failover time (the new leader's first offers); needs --masters 2 or more, or "
        "--registry sqlite (the one master is then started again on its registry and ports)",
    )
    p.add_argument(
        "--loss-wave",
        type=positive_int,
        default=None,
        metavar="N",
        help="N agents lose their streams at once (a partition) a quarter into the measured "
        "window and reconnect --loss-wave-away seconds later (plus up to their 5 s backoff); "
        "the report says how long they "
        "took to be back and how many tasks were lost or ran on after being reported lost",
    )
    p.add_argument(
        "--loss-wave-away",
        type=positive_float,
        default=5.0,
        metavar="S",
        help="how long a --loss-wave's agents stay away (default 5)",
    )
    p.add_argument(
        "--agent-processes",
        type=positive_int,
        default=None,
        metavar="K",
        help="processes hosting the agents (default: one per 2500 agents, at most 4)",
    )
    p.add_argument(
        "--framework-processes",
        type=positive_int,
        default=None,
        metavar="K",
        help="processes hosting the frameworks (default: one per 100 frameworks)",
    )
    p.add_argument(
        "--acls",
        type=Path,
        default=None,
        metavar="FILE",
        help="the started masters' ACL file (corral master --acls; docs/security.md)",
    )
    add_tls_args(p)
    p.add_argument("--json", type=Path, default=None, metavar="FILE", help="write the figures")
    p.add_argument("--plot", type=Path, default=None, metavar="FILE", help="write a PNG chart")
    p.add_argument("--seed", type=int, default=0, help="the load's seed (default 0)")
    p.set_defaults(func=run, needs_server=True, starts_processes=True)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from corral.loadtest.options import LoadTestOptions, OptionError
    from corral.loadtest.report import print_final
    from corral.loadtest.run import LoadTestError, run_loadtest

    if args.master_http is not None and args.master is None:
        raise CliError("--master-http needs --master", exit_code=2)
    if args.master is None and (args.tls_dir or args.ca or args.cert or args.key):
        raise CliError(
            "--tls-dir, --ca, --cert and --key are for a --master of one's own: the masters the "
            "load test starts set up TLS as `corral master` does with no flag (or --insecure)",
            exit_code=2,
        )
    if args.acls is not None and (args.master is not None or args.insecure):
        raise CliError("--acls applies to a master the load test starts with TLS", exit_code=2)
    if args.launch_pacing is not None and args.master is not None:
        raise CliError(
            "--launch-pacing and --no-launch-pacing apply to a master the load test starts",
            exit_code=2,
        )
    try:
        opts = LoadTestOptions(
            agents=args.agents,
            frameworks=args.frameworks,
            duration=args.duration,
            warmup=args.warmup,
            mode=args.mode,
            task_seconds=args.task_seconds,
            allocation_interval=args.allocation_interval,
            launch_pacing=args.launch_pacing is not False,
            launch_latency_target=args.launch_latency_target,
            master=args.master,
            master_http=args.master_http,
            agent_processes=args.agent_processes or 0,
            framework_processes=args.framework_processes or 0,
            seed=args.seed,
            masters=args.masters,
            registry=args.registry or ("zookeeper" if args.masters > 1 else "memory"),
            kill_leader_at=args.kill_leader_at,
            zk_session_timeout=args.zk_session_timeout,
            loss_wave=args.loss_wave or 0,
            loss_wave_away=args.loss_wave_away,
            insecure=bool(args.insecure),
            acls=str(args.acls.resolve()) if args.acls is not None else None,
        )
    except OptionError as exc:
        raise CliError(str(exc), exit_code=2) from None
    for path in (args.json, args.plot):
        if path is not None and not path.parent.is_dir():
            raise CliError(f"{path.parent} is not a directory", exit_code=2)
    if args.plot is not None and importlib.util.find_spec("matplotlib") is None:
        raise CliError("--plot needs matplotlib: pip install 'corral[plot]'", exit_code=2)
    if args.master is not None:
        credentials()  # a master of one's own: its credential must be there (exit 2 if not)
    console = Console(stderr=True)
    try:
        figures, series = stop_signals.run(run_loadtest(opts, console))
    except LoadTestError as exc:
        raise CliError(str(exc)) from None
    print_final(Console(), figures)
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    if args.plot is not None:
        from corral.loadtest.plot import plot

        plot(series, figures, args.plot)
    return 0
