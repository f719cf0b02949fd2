"""The web UI's cost at size (docs/performance.md, "The web UI at 10,000 agents").

Alternated runs of ``corral loadtest`` against a master this script starts (the load test's own
flags), without and with the cluster page open in headless Chromium. Prints, per run, the
master's launches/s and CPU; for runs with the page, how long the cluster page took to show
10,000 agents (navigation to counts, groups and the first page of agents drawn) and what each
of its requests costs the master. Needs Debian's chromium and chromium-driver (.ci/run
installs them) and the dev extra (selenium)::

    .venv/bin/python scripts/ui_bench.py --agents 10000 --frameworks 100 --pairs 2

The master and the load run in plain text (``--insecure``), so the figure is the page's own
cost. The machine is shared: run the gauge (``corral bench launches --agents 1000 --frameworks 50``)
beside it, and read the pairs, not single runs.

``--synthetic`` measures the master's side at a size the load generator cannot reach on this
machine (issue #48: 50,000 agents): a real master (its gRPC and HTTP ports, its runtime and
loops) in this process, its core given N agents registering directly (events, no agent
processes; they never heartbeat, so the agent timeout is set past the run), then each endpoint
the cluster page and `corral get agents` use timed over real HTTP, and the cluster page loaded in
headless Chromium against it::

    .venv/bin/python scripts/ui_bench.py --synthetic --agents 50000
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.e2e.browser import Browser, chromium

CORRAL = (sys.executable, "-m", "corral.cli.main")


def get(url: str) -> tuple[Any, float]:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=60) as r:
        body = json.loads(r.read())
    return body, time.perf_counter() - started


def start_master(work: Path) -> tuple[subprocess.Popen[bytes], str, str]:
    ready = work / "master-ready.json"
    log = open(work / "master.log", "wb")  # noqa: SIM115 (closed with the process)
    proc = subprocess.Popen(
        [
            *CORRAL,
            "master",
            *("--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", "--ready-file", str(ready)),
            # As `corral loadtest` starts its own master (corral/loadtest/processes.py).
            *("--allocation-interval", "1", "--agent-timeout", "120", "--log-level", "warning"),
            # Plain text, as the figures in docs/performance.md were taken: the page's cost to
            # the master, not TLS's (measured on its own there, "The cost of security").
            "--insecure",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the master exited: {(work / 'master.log').read_text()[-2000:]}")
        try:
            info = json.loads(ready.read_text())
            return proc, info["grpc"], info["http"]
        except (OSError, ValueError, KeyError):
            time.sleep(0.1)
    raise SystemExit("the master did not start in 120 s")


def wait_agents(http: str, n: int, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            body, _ = get(f"http://{http}/api/v1/cluster/samples")
            if body["samples"] and body["samples"][-1]["by_status"]["active"] >= n:
                return
        except OSError:
            pass
        time.sleep(1)
    raise SystemExit(f"{n} agents did not register in {timeout:g} s")


def page_load(b: Browser, agents: int) -> float:
    """Seconds from navigation to the cluster page drawn with every agent counted active, its
    groups and its first page of agents."""
    counted = f"{agents / 1000:.0f}k" if agents >= 10_000 else str(agents)  # as the page's num()
    b.open("#/cluster")
    shown = b.wait(
        "document.querySelector('table.agents tbody tr')"
        " && document.querySelector('table.groups tbody tr')"
        " && document.querySelector('.counts').innerText.includes(arguments[0] + ' ✓ active')"
        " && performance.now()",
        "the cluster page with every agent",
        120,
        counted,
    )
    return float(shown) / 1000


def endpoint_costs(http: str) -> dict[str, float]:
    """The median of 5 answers' wall time (the master's CPU for it, on a busy master)."""
    out = {}
    for path in (
        "/api/v1/cluster",
        "/api/v1/agents?limit=50",
        "/api/v1/cluster/samples",
        "/api/v1/tasks?limit=50",
        "/api/v1/frameworks?limit=50",
    ):
        out[path] = statistics.median(get(f"http://{http}{path}")[1] for _ in range(5))
    return out


def one_run(args: argparse.Namespace, page: bool, work: Path) -> dict[str, Any]:
    work.mkdir(parents=True)
    master, grpc, http = start_master(work)
    result: dict[str, Any] = {"page": page}
    load: subprocess.Popen[bytes] | None = None
    try:
        out = work / "loadtest.json"
        load = subprocess.Popen(
            [
                *CORRAL,
                "loadtest",
                *("--master", grpc, "--master-http", http),
                *("--agents", str(args.agents), "--frameworks", str(args.frameworks)),
                *("--duration", str(args.duration), "--json", str(out)),
                "--insecure",
            ],
            stdout=open(work / "loadtest.log", "wb"),  # noqa: SIM115
            stderr=subprocess.STDOUT,
        )
        wait_agents(http, args.agents)
        cpu = psutil.Process(master.pid)
        before = cpu.cpu_times()
        started = time.monotonic()
        if page:
            done = threading.Event()
            served = get(f"http://{http}/api/v1/cluster/samples")[0]["served_seconds"]
            with chromium(f"http://{http}", work) as b:
                result["page_load_s"] = page_load(b, args.agents)
                browser = psutil.Process(b.driver.service.process.pid)
                spent = 0.0
                seen: dict[int, float] = {}
                while load.poll() is None and not done.wait(1):
                    # The page stays open, refreshing itself, until the load test ends; the
                    # browser's CPU is read as it goes (its processes come and go).
                    for p in [browser, *browser.children(recursive=True)]:
                        try:
                            t = p.cpu_times()
                            seen[p.pid] = t.user + t.system
                        except psutil.Error:
                            pass
                spent = sum(seen.values())
                result["browser_cpu_percent"] = round(100 * spent / (time.monotonic() - started), 1)
        load.wait()
        after = cpu.cpu_times()
        elapsed = time.monotonic() - started
        if page:
            # What the page's own requests cost the master while it was open, then (the load
            # over, its agents still known) each endpoint's answer, timed from here.
            now = get(f"http://{http}/api/v1/cluster/samples")[0]
            result["page_served_percent"] = round(
                100 * (now["served_seconds"] - served) / elapsed, 2
            )
            result["sample_s"] = now["cost_seconds"]
            result["endpoints_s"] = endpoint_costs(http)
        figures = json.loads(out.read_text())
        result["launches_per_s"] = figures["launches_per_s"]
        result["master_cpu_percent"] = round(
            100 * (after.user + after.system - before.user - before.system) / elapsed, 1
        )
    finally:
        if load is not None and load.poll() is None:
            load.terminate()
            load.wait(60)
        master.terminate()
        master.wait(30)
    return result


class SyntheticMaster:
    """master/bench/synthetic_master.py's master on an event loop of its own thread, so this
    thread can block on HTTP and the browser."""

    def __init__(self, agents: int) -> None:
        import asyncio

        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.master: Any = self.call(self._start(agents))

    def call(self, coro: Any) -> Any:
        import asyncio

        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=1800)

    async def _start(self, agents: int) -> Any:
        from corral.logging import configure
        from corral.master.bench.synthetic_master import master_with_agents

        configure("warning")  # not a line per agent added
        return await master_with_agents(agents)

    def stop(self) -> None:
        self.call(self.master.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)


def timed_get(url: str) -> tuple[float, float, int]:
    """(wall seconds, the master's cost header or nan, bytes) of one GET."""
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=300) as r:
        body = r.read()
        cost = float(r.headers.get("X-Corral-Cost") or "nan")
    return time.perf_counter() - started, cost, len(body)


def cli_costs(grpc: str) -> dict[str, Any]:
    """`corral get agents` (pages of 500, printed as they come): seconds to its first row and
    to its last; and one GetState of the whole state over gRPC, for contrast."""
    import grpc as grpc_lib

    from corral.limits import MAX_MESSAGE_BYTES
    from corral.v1 import operator_pb2, operator_pb2_grpc

    started = time.perf_counter()
    proc = subprocess.Popen(
        [*CORRAL, "get", "agents", "--insecure", "--master", grpc, "--timeout", "120"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    first_row = None
    lines = 0
    for _line in proc.stdout:
        lines += 1
        if lines == 2:
            first_row = time.perf_counter() - started
    proc.wait(120)
    out: dict[str, Any] = {
        "corral get agents: first row s": round(first_row or float("nan"), 2),
        "corral get agents: all s": round(time.perf_counter() - started, 2),
        "rows": lines - 1,
    }
    options = [("grpc.max_receive_message_length", MAX_MESSAGE_BYTES)]
    with grpc_lib.insecure_channel(grpc, options=options) as channel:
        stub = operator_pb2_grpc.OperatorStub(channel)  # type: ignore[no-untyped-call]
        started = time.perf_counter()
        try:
            state = stub.GetState(operator_pb2.GetStateRequest(), timeout=120)
            out["GetState whole s"] = round(time.perf_counter() - started, 2)
            out["GetState bytes"] = state.ByteSize()
        except grpc_lib.RpcError as exc:
            out["GetState whole"] = f"failed: {exc.code()} {exc.details()}"
    return out


def synthetic_run(args: argparse.Namespace) -> dict[str, Any]:
    import os

    started = time.perf_counter()
    master = SyntheticMaster(args.agents)
    result: dict[str, Any] = {
        "agents": args.agents,
        "registered_s": round(time.perf_counter() - started, 1),
        "loadavg_before": os.getloadavg(),
    }
    http = f"http://{master.master.http_address}"
    try:
        endpoints = {}
        for path in (
            "/api/v1/cluster",
            "/api/v1/agents?limit=50",
            "/api/v1/agents?limit=50&sort=cpus",
            "/api/v1/state/agents",
            "/api/v1/state/agents?limit=5000",
        ):
            runs = [timed_get(http + path) for _ in range(5)]
            wall = statistics.median(r[0] for r in runs)
            endpoints[path] = {"wall_s": round(wall, 4), "bytes": runs[0][2]}
        # Every page of the agents, as `corral get agents` reads them (500 at a time).
        t0, pages, after = time.perf_counter(), 0, ""
        while True:
            body, _ = get(f"{http}/api/v1/state/agents" + (f"?after={after}" if after else ""))
            pages += 1
            if body["next"] is None:
                break
            after = body["next"]
        endpoints["all pages of /api/v1/state/agents"] = {
            "wall_s": round(time.perf_counter() - t0, 3),
            "pages": pages,
        }
        whole = timed_get(http + "/api/v1/state")
        endpoints["/api/v1/state (whole, for contrast)"] = {
            "wall_s": round(whole[0], 3),
            "bytes": whole[2],
        }
        result["endpoints"] = endpoints
        result["cli"] = cli_costs(master.master.grpc_address)
        loads = []
        with (
            tempfile.TemporaryDirectory(prefix="corral-ui-bench-") as tmp,
            chromium(http, Path(tmp)) as b,
        ):
            for _ in range(args.pairs):
                loads.append(round(page_load(b, args.agents), 3))
                b.open("#/events")  # away, so the next load draws the page anew
        result["page_load_s"] = loads
        result["loadavg_after"] = os.getloadavg()
    finally:
        master.stop()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--synthetic",
        action="store_true",
        help="a master of --agents registered directly, no load test (the docstring)",
    )
    parser.add_argument("--agents", type=int, default=10_000)
    parser.add_argument("--frameworks", type=int, default=100)
    parser.add_argument("--duration", type=int, default=30)
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.synthetic:
        result = synthetic_run(args)
        print(json.dumps(result, indent=1), flush=True)
        if args.json:
            args.json.write_text(json.dumps(result, indent=1))
        return
    runs = []
    with tempfile.TemporaryDirectory(prefix="corral-ui-bench-") as tmp:
        for i in range(args.pairs):
            order = (False, True) if i % 2 == 0 else (True, False)
            for page in order:
                r = one_run(args, page, Path(tmp) / f"run-{len(runs)}")
                runs.append(r)
                print(json.dumps(r), flush=True)
    for page in (False, True):
        rates = [r["launches_per_s"] for r in runs if r["page"] is page]
        label = "open" if page else "closed"
        print(f"page {label}: launches/s {rates}, mean {statistics.mean(rates):.0f}")
    if args.json:
        args.json.write_text(json.dumps(runs, indent=1))


if __name__ == "__main__":
    main()
