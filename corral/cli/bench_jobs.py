"""``corral bench jobs``: the job service's admission cycle with many queued jobs
(frameworks/jobs/bench.py, in this process), and with ``--service`` the memory of a real
``corral jobs serve`` process holding that many jobs (submitted through its API)."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from corral.cli.common import positive_int
from corral.cli.errors import CliError


def register(what: Any) -> None:
    p = what.add_parser(
        "jobs",
        help="the job service's admission cycle with 10,000 queued jobs in 20 queues",
    )
    p.add_argument("--jobs", type=positive_int, default=10_000, help="queued jobs (10000)")
    p.add_argument("--queues", type=positive_int, default=20, help="cluster queues (20)")
    p.add_argument("--cycles", type=positive_int, default=5, help="measured cycles per phase")
    p.add_argument("--seed", type=int, default=1, help="the jobs' seed (1)")
    p.add_argument(
        "--service",
        action="store_true",
        help="also start a real `corral jobs serve` (plain text, no master needed: its queues "
        "admit nothing), submit the jobs through its API and report its RSS",
    )
    p.add_argument("--json", type=Path, metavar="FILE", help="also write the figures here")
    p.set_defaults(func=run, needs_server=True)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from corral.frameworks.jobs import bench

    console = Console()
    with console.status(f"{args.jobs} jobs in {args.queues} queues"):
        result = bench.run(args.jobs, args.queues, args.cycles, args.seed, time.process_time)
    table = Table(title=f"admission cycle, ms of CPU ({args.jobs} jobs, {args.queues} queues)")
    for col in ("phase", "cycles", "median", "max", "admitted", "preempted"):
        table.add_column(col, justify="right")
    for phase in ("cold", "steady", "churn", "lend", "reclaim"):
        p = result[phase]
        table.add_row(
            phase,
            str(p["cycles"]),
            f"{p['median_ms']:.1f}",
            f"{p['max_ms']:.1f}",
            str(p["admitted"]),
            str(p["preempted"]),
        )
    console.print(table)
    if args.service:
        with console.status(f"a job service with {args.jobs} jobs"):
            result["service"] = service_memory(args.jobs, args.queues, args.seed)
        s = result["service"]
        console.print(
            f"job service holding {s['jobs']} jobs: RSS {s['rss_mib']:.0f} MiB "
            f"({s['rss_empty_mib']:.0f} MiB empty); {s['submit_per_s']:.0f} submissions/s; "
            f"its last cycle {s['last_cycle_ms']:.1f} ms"
        )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


def service_memory(jobs: int, queues: int, seed: int) -> dict[str, Any]:
    """RSS of a `corral jobs serve` process before and after ``jobs`` submissions."""
    import psutil

    from corral.frameworks.jobs.bench import config

    with tempfile.TemporaryDirectory(prefix="corral-bench-jobs-") as tmp:
        work = Path(tmp)
        doc = config(queues).to_json()
        for cq in doc["cluster_queues"]:  # admit nothing: no framework is started
            for quotas in cq["resources"].values():
                for r in quotas:
                    quotas[r] = {"nominal": 0}
        (work / "queues.json").write_text(json.dumps(doc))
        ready = work / "ready.json"
        log = open(work / "jobs.log", "wb")  # noqa: SIM115 - closed below
        proc = subprocess.Popen(
            [
                *(sys.executable, "-m", "corral.cli.main", "jobs", "serve", "--insecure"),
                *("--master", "127.0.0.1:1", "--listen", "127.0.0.1:0"),
                *("--state", str(work / "state"), "--queues", str(work / "queues.json")),
                *("--ready-file", str(ready), "--log-level", "warning"),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 60
            while not ready.exists():
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.flush()
                    raise CliError(
                        "the job service did not start: " + (work / "jobs.log").read_text()[-2000:]
                    )
                time.sleep(0.1)
            url = json.loads(ready.read_text())["url"]
            me = psutil.Process(proc.pid)
            empty = me.memory_info().rss
            import random

            rng = random.Random(seed)
            started = time.monotonic()
            for j in range(jobs):
                body = {
                    "name": f"job-{j}",
                    "queue": f"q{rng.randrange(queues):02d}",
                    "stages": [
                        {"name": "s", "tasks": rng.randint(1, 8), "cpus": 1, "command": "true"}
                    ],
                }
                request = urllib.request.Request(
                    url + "/v1/jobs",
                    data=json.dumps(body).encode(),
                    method="POST",
                    headers={"Content-Type": "application/json"},
                )
                with urllib.request.urlopen(request, timeout=30) as response:
                    response.read()
            took = time.monotonic() - started
            time.sleep(1.0)  # a few cycles with every job queued
            with urllib.request.urlopen(url + "/v1/health", timeout=30) as response:
                health = json.loads(response.read())
            rss = me.memory_info().rss
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(30)
            log.close()
    return {
        "jobs": jobs,
        "rss_mib": rss / 2**20,
        "rss_empty_mib": empty / 2**20,
        "submit_per_s": jobs / took,
        "last_cycle_ms": health.get("last_cycle_ms", 0.0),
    }
