"""What the workers report and what the master exposes, as per-second series and window figures.

Framework-side figures come from the workers' ticks (counts per interval, stamped with the
wall-clock time the interval ended); master-side figures come from ``/metrics`` scrapes (counter
and histogram differences between two scrapes) and from psutil on the master's pid when this
process started it. The measurement window is [warm-up end, warm-up end + duration].
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from corral.frameworks.loadtest.histogram import Histogram
from corral.loadtest.scrape import Scrape, beyond_last_bound, bucket_delta, quantile

_COUNTS = ("offers", "declined", "accepts", "launched", "running", "finished", "lost")


@dataclass
class MasterSample:
    t: float
    cpu_percent: float | None  # of one core, since the previous sample
    rss_mb: float | None
    machine: MachineTimes | None = None  # the whole machine's CPU counters at ``t``
    # Cumulative CPU seconds of the load test's own processes at ``t``, per kind ("agents",
    # "frameworks"): where the rest of the machine's CPU goes besides the master.
    groups: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class MachineTimes:
    """Cumulative CPU seconds of all cores (Linux /proc/stat, via psutil): total, idle, and
    stolen by the hypervisor. On a shared virtual machine steal is what makes two runs of the
    same build differ; the load test reports it so a reader can tell a noisy run."""

    total: float
    idle: float
    steal: float


def group_cpu(window: list[MasterSample]) -> dict[str, float]:
    """Percent of one core used by each kind of process between the first and last sample of
    the window that both measured it."""
    out: dict[str, float] = {}
    kinds = {k for m in window for k in m.groups}
    for kind in sorted(kinds):
        marks = [(m.t, m.groups[kind]) for m in window if kind in m.groups]
        if len(marks) >= 2 and marks[-1][0] > marks[0][0]:
            (t0, c0), (t1, c1) = marks[0], marks[-1]
            out[kind] = round(100.0 * (c1 - c0) / (t1 - t0), 1)
    return out


def machine_share(window: list[MasterSample]) -> dict[str, float | None]:
    """Busy and stolen percent of all cores between the first and last sample of a window."""
    marks = [m.machine for m in window if m.machine is not None]
    if len(marks) < 2 or marks[-1].total <= marks[0].total:
        return {"machine_cpu_busy_percent": None, "cpu_steal_percent": None}
    total = marks[-1].total - marks[0].total
    idle = marks[-1].idle - marks[0].idle
    steal = marks[-1].steal - marks[0].steal
    return {
        "machine_cpu_busy_percent": round(100.0 * (total - idle - steal) / total, 1),
        "cpu_steal_percent": round(100.0 * steal / total, 1),
    }


@dataclass
class Collector:
    ticks: list[dict[str, Any]] = field(default_factory=list)
    scrapes: list[Scrape] = field(default_factory=list)
    master: list[MasterSample] = field(default_factory=list)
    lost_states: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    call_errors: int = 0
    unterminated: int = 0
    finals: int = 0

    def add_line(self, line: dict[str, Any]) -> None:
        kind = line.get("kind")
        if kind == "tick":
            self.ticks.append(line)
            self.lost_states.update(line.get("lost_states", {}))
            self.call_errors += int(line.get("call_errors", 0))
            for e in line.get("errors", []):
                if len(self.errors) < 20:
                    self.errors.append(e)
        elif kind == "final":
            self.finals += 1
            self.unterminated += int(line.get("unterminated", 0))
        elif kind == "failed":
            self.errors.append(f"worker: {line.get('error')}")

    # -- totals over a window -------------------------------------------------------------

    def _ticks_in(self, t0: float, t1: float) -> list[dict[str, Any]]:
        return [k for k in self.ticks if t0 < k["t"] <= t1]

    def counts(self, t0: float, t1: float) -> dict[str, int]:
        ticks = self._ticks_in(t0, t1)
        return {name: sum(int(k.get(name, 0)) for k in ticks) for name in _COUNTS}

    def latency(self, t0: float, t1: float) -> Histogram:
        return Histogram.merged(
            Histogram.from_json(k.get("accept_to_running", {})) for k in self._ticks_in(t0, t1)
        )

    def pending(self) -> int:
        """Tasks launched and not yet ended, at the latest tick of each worker (approximate)."""
        return int(self.ticks[-1].get("pending", 0)) if self.ticks else 0

    def _scrape_at(self, t: float) -> Scrape | None:
        """The last scrape at or before ``t`` (the first one if none is)."""
        best = None
        for s in self.scrapes:
            if s.t <= t or best is None:
                best = s
        return best

    def master_window(self, t0: float, t1: float) -> tuple[Scrape | None, Scrape | None]:
        before = self._scrape_at(t0)
        after = self._scrape_at(t1)
        if before is after:
            return None, after
        return before, after

    def all_lost(self) -> int:
        return sum(int(k.get("lost", 0)) for k in self.ticks) + self.unterminated

    # -- per-second series, for the live display and the plot --------------------------------

    def series(self, start: float, end: float, step: float = 1.0) -> dict[str, list[float]]:
        n = max(1, math.ceil((end - start) / step))
        out: dict[str, list[float]] = {
            k: [0.0] * n for k in ("t", "offers", "running", "finished", "lost")
        }
        hists = [Histogram() for _ in range(n)]
        for i in range(n):
            out["t"][i] = (i + 1) * step
        for k in self.ticks:
            i = int((k["t"] - start) / step)
            if 0 <= i < n:
                for name in ("offers", "running", "finished", "lost"):
                    out[name][i] += k.get(name, 0) / step
                hists[i].merge(Histogram.from_json(k.get("accept_to_running", {})))
        out["p50_ms"] = [_ms(h.quantile(0.5)) for h in hists]
        out["p99_ms"] = [_ms(h.quantile(0.99)) for h in hists]
        cycle_t: list[float] = []
        cycle_p99: list[float] = []
        for prev, cur in zip(self.scrapes, self.scrapes[1:], strict=False):
            q = quantile(bucket_delta(prev, cur, "corral_allocation_cycle_seconds"), 0.99)
            cycle_t.append(cur.t - start)
            cycle_p99.append(_ms(q))
        out["cycle_t"], out["cycle_p99_ms"] = cycle_t, cycle_p99
        out["cpu_t"] = [m.t - start for m in self.master if m.cpu_percent is not None]
        out["cpu"] = [m.cpu_percent or 0.0 for m in self.master if m.cpu_percent is not None]
        return out


def _ms(seconds: float | None) -> float:
    return math.nan if seconds is None else seconds * 1000.0


def figures(
    c: Collector, t0: float, t1: float, parameters: dict[str, Any], errors: list[str]
) -> dict[str, Any]:
    """The final figures: what ``--json`` writes and the table shows."""
    span = t1 - t0
    counts = c.counts(t0, t1)
    lat = c.latency(t0, t1)
    before, after = c.master_window(t0, t1)

    def rate(n: float) -> float:
        return round(n / span, 1) if span > 0 else 0.0

    def hist_ms(name: str) -> dict[str, float | bool | None]:
        if after is None:
            return {"p50": None, "p99": None}
        b = bucket_delta(before, after, name)
        out: dict[str, float | bool | None] = {}
        for q, key in ((0.5, "p50"), (0.99, "p99")):
            out[key] = _r(quantile(b, q))
            if beyond_last_bound(b, q):
                out[f"{key}_beyond"] = True  # the bound, a floor: the report says "> bound"
        return out

    window = [m for m in c.master if t0 < m.t <= t1]
    cpu = [m.cpu_percent for m in window if m.cpu_percent is not None]
    rss = [m.rss_mb for m in c.master if m.rss_mb is not None]
    master: dict[str, Any] = {}
    if after is not None:

        def delta(name: str, **labels: str) -> float:
            old = before.value(name, **labels) if before is not None else 0.0
            return after.value(name, **labels) - old

        span_m = after.t - before.t if before is not None else span
        per_s = (lambda n: round(n / span_m, 1)) if span_m > 0 else (lambda n: 0.0)
        master = {
            "offers_per_s": per_s(delta("corral_offers_sent_total")),
            "declines_per_s": per_s(delta("corral_offers_declined_total")),
            "accepts_per_s": per_s(delta("corral_accepts_total")),
            "tasks_sent_per_s": per_s(delta("corral_tasks_launched_total")),
            "running_per_s": per_s(delta("corral_status_updates_total", state="RUNNING")),
            "status_updates_per_s": per_s(delta("corral_status_updates_total")),
            "events_per_s": per_s(delta("corral_events_processed_total")),
            # gRPC messages over every method (go-grpc-prometheus' counters in the master).
            "messages_received_per_s": per_s(delta("grpc_server_msg_received_total")),
            "messages_sent_per_s": per_s(delta("grpc_server_msg_sent_total")),
            "launch_latency_ms": hist_ms("corral_task_launch_latency_seconds"),
            "status_update_lag_ms": hist_ms("corral_status_update_lag_seconds"),
            # Admission control at work (docs/operations.md): refusals in the window by bound,
            # and the most accepts that ever waited for the core.
            "accepts_refused": {
                bound: delta("corral_accepts_refused_total", bound=bound)
                for bound in ("waiting_accepts", "agent_launches", "framework_statuses")
            },
            "accepts_waiting_peak": after.value("corral_accepts_waiting_peak"),
            "cycles_held": delta("corral_allocation_cycles_held_total"),
        }
    process_cpu = group_cpu(window)
    master_cpu = round(sum(cpu) / len(cpu), 1) if cpu else None
    unit, unit_rate = (
        ("offer", rate(counts["offers"]))
        if parameters.get("mode") == "decline"
        else ("launch", rate(counts["running"]))
    )
    return {
        "launches_per_s": rate(counts["running"]),
        "offers_per_s": rate(counts["offers"]),
        "accepts_per_s": rate(counts["accepts"]),
        "declines_per_s": rate(counts["declined"]),
        "tasks_accepted_per_s": rate(counts["launched"]),
        "completions_per_s": rate(counts["finished"]),
        "accept_to_running_ms": {
            "p50": _r(lat.quantile(0.5)),
            "p99": _r(lat.quantile(0.99)),
        },
        "offer_latency_ms": hist_ms("corral_offer_latency_seconds"),
        "allocation_cycle_ms": hist_ms("corral_allocation_cycle_seconds"),
        "master_cpu_percent": master_cpu,
        **machine_share(window),
        "process_cpu_percent": process_cpu,
        "cost": unit_cost(unit, unit_rate, master_cpu, process_cpu, master),
        "master_rss_mb": round(max(rss), 1) if rss else None,
        "tasks_lost": c.all_lost(),
        # Reported running or finished after being counted lost (a task run twice, as far as
        # its framework can tell): a loss wave must leave this at 0.
        "tasks_revived": sum(int(k.get("revived", 0)) for k in c.ticks),
        "lost_states": dict(c.lost_states),
        "tasks_unterminated": c.unterminated,
        "call_errors": c.call_errors,
        "errors": errors + c.errors,
        "window_seconds": round(span, 2),
        "master": master,
        "parameters": parameters,
    }


def unit_cost(
    unit: str,
    per_s: float,
    master_cpu: float | None,
    process_cpu: dict[str, float],
    master: dict[str, Any],
) -> dict[str, Any]:
    """What one unit of work (a task launched, or an offer made in decline mode) cost: CPU µs
    of each kind of process, and the master's gRPC messages. Machine-independent enough to
    compare runs on machines of different speed, and to see which process bounds the rate:
    the rate times the sum of the CPU costs cannot pass the machine's cores."""

    def us(percent: float | None) -> float | None:
        if percent is None or per_s <= 0:
            return None
        return round(percent / 100.0 / per_s * 1e6, 1)

    received = master.get("messages_received_per_s")
    sent = master.get("messages_sent_per_s")
    return {
        "unit": unit,
        "master_cpu_us": us(master_cpu),
        "agents_cpu_us": us(process_cpu.get("agents")),
        "frameworks_cpu_us": us(process_cpu.get("frameworks")),
        "master_messages_in": round(received / per_s, 3) if received and per_s > 0 else None,
        "master_messages_out": round(sent / per_s, 3) if sent and per_s > 0 else None,
    }


def _r(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000.0, 3)
