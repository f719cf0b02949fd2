"""``corral scenario NAME [--json FILE]``: replay a classic failure on a local cluster, without
and with its fix (docs/scenarios.md); ``corral scenario --list`` lists them."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

from corral import stop_signals
from corral.cli.errors import CliError
from corral.scenarios import NAMES  # names only: a scenario's module loads when it runs


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "scenario",
        help="replay a classic failure, without and with its fix (corral scenario --list)",
        description="Start a master and simulated agents on this machine, run frameworks "
        "without and then with the fix, and print a timeline and figures (docs/scenarios.md).",
    )
    p.add_argument("name", nargs="?", choices=NAMES, metavar="NAME", help=", ".join(NAMES))
    p.add_argument("--list", action="store_true", help="list the scenarios and exit")
    p.add_argument("--json", type=Path, metavar="FILE", help="also write the figures as JSON")
    p.add_argument(
        "--size",
        choices=("small", "full"),
        default="full",
        help="small: the quick run the tests use; full (default): the story at full length",
    )
    p.add_argument(
        "--work-dir", type=Path, help="where the clusters keep logs (default: a temporary folder)"
    )
    p.set_defaults(func=run, needs_server=True, starts_processes=True)


def run(args: argparse.Namespace) -> int:
    from corral.scenarios import load
    from corral.scenarios.base import ScenarioError, run_scenario

    if args.list:
        for name in NAMES:
            print(f"{name:<18}  {load(name).summary}")
        return 0
    if args.name is None:
        raise CliError("name a scenario (corral scenario --list)", exit_code=2)
    scenario = load(args.name)
    work: Path = args.work_dir or Path(tempfile.mkdtemp(prefix="corral-scenario-"))
    keep = args.work_dir is not None
    try:
        result = stop_signals.run(run_scenario(scenario, args.size, work, sys.stdout))
    except ScenarioError as e:
        keep = True  # the processes' logs say why: the message points at them
        raise CliError(f"scenario {args.name}: {e} (logs in {work})") from None
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0
