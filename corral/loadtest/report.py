"""The live display while the test runs and the final table (rich)."""

from __future__ import annotations

import math
from typing import Any

from rich.console import Console
from rich.table import Table

# All cores this busy: the rates measure the machine as much as the master.
MACHINE_BOUND_PERCENT = 90.0


def live_table(phase: str, elapsed: float, status: dict[str, Any]) -> Table:
    t = Table(title=f"corral loadtest — {phase} ({elapsed:.0f} s)", show_header=True)
    for col in ("offers/s", "accepts/s", "RUNNING/s", "done/s", "p99 ms", "pending", "lost"):
        t.add_column(col, justify="right")
    t.add_column("master", justify="right")
    t.add_row(
        _n(status.get("offers")),
        _n(status.get("accepts")),
        _n(status.get("running")),
        _n(status.get("finished")),
        _n(status.get("p99_ms")),
        _n(status.get("pending")),
        _n(status.get("lost")),
        status.get("master", ""),
    )
    return t


def _n(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    if isinstance(v, float):
        return f"{v:,.1f}" if v < 100 else f"{v:,.0f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def _ratio(v: float | None) -> str:
    """A per-unit ratio, often well under one (messages per offer): three significant digits."""
    return "—" if v is None or math.isnan(v) else f"{v:.3g}"


def _pq(d: dict[str, Any] | None) -> str:
    if not d or d.get("p50") is None:
        return "—"
    # Past a histogram's last finite bound a quantile is only known to exceed it.
    p50, p99 = (("> " if d.get(f"{k}_beyond") else "") + _n(d[k]) for k in ("p50", "p99"))
    return f"{p50} / {p99}"


def final_table(f: dict[str, Any]) -> Table:
    p = f["parameters"]
    title = (
        f"{p['mode']} mode: {p['agents']} agents x {p['frameworks']} frameworks, "
        f"{f['window_seconds']:g} s measured after {p['warmup']:g} s warm-up"
    )
    t = Table(title=title)
    t.add_column("figure")
    t.add_column("value", justify="right")
    m = f.get("master") or {}
    cost = f.get("cost") or {}
    reg = f.get("registration") or {}
    rows = [
        (
            "agents registered in s (agents/s, UNREACHABLE)",
            f"{_n(reg.get('seconds'))} ({_n(reg.get('agents_per_s'))}, "
            f"{_n(reg.get('unreachable'))})",
        ),
        (
            "registering: master / agents CPU % (limit)",
            f"{_n(reg.get('master_cpu_percent'))} / {_n(reg.get('agents_cpu_percent'))} "
            f"({reg.get('limit', '—')})",
        ),
        ("offers delivered /s", _n(f["offers_per_s"])),
        ("accepts /s", _n(f["accepts_per_s"])),
        ("declines /s", _n(f["declines_per_s"])),
        ("tasks launched (RUNNING) /s", _n(f["launches_per_s"])),
        ("task completions /s", _n(f["completions_per_s"])),
        ("accept→RUNNING p50 / p99 ms (framework)", _pq(f["accept_to_running_ms"])),
        ("accept→RUNNING p50 / p99 ms (master)", _pq(m.get("launch_latency_ms"))),
        ("offer latency p50 / p99 ms (freed→offered)", _pq(f["offer_latency_ms"])),
        ("allocation cycle p50 / p99 ms", _pq(f["allocation_cycle_ms"])),
        ("status update lag p50 / p99 ms", _pq(m.get("status_update_lag_ms"))),
        ("master CPU % (of one core)", _n(f["master_cpu_percent"])),
        (
            "agents / frameworks CPU % (of one core)",
            f"{_n(f.get('process_cpu_percent', {}).get('agents'))} / "
            f"{_n(f.get('process_cpu_percent', {}).get('frameworks'))}",
        ),
        (
            "machine CPU busy / stolen % (all cores)",
            f"{_n(f.get('machine_cpu_busy_percent'))} / {_n(f.get('cpu_steal_percent'))}",
        ),
        (
            f"CPU µs per {cost.get('unit', 'unit')}: master / agents / frameworks",
            f"{_n(cost.get('master_cpu_us'))} / {_n(cost.get('agents_cpu_us'))} / "
            f"{_n(cost.get('frameworks_cpu_us'))}",
        ),
        (
            f"master gRPC messages per {cost.get('unit', 'unit')}: in / out",
            f"{_ratio(cost.get('master_messages_in'))} / {_ratio(cost.get('master_messages_out'))}",
        ),
        ("master RSS MB (max)", _n(f["master_rss_mb"])),
        ("master events /s", _n(m.get("events_per_s"))),
        ("tasks lost", _n(f["tasks_lost"])),
        ("tasks run on after reported lost", _n(f.get("tasks_revived"))),
        ("call errors", _n(f["call_errors"])),
    ]
    for name, value in rows:
        t.add_row(name, value)
    return t


def print_final(console: Console, f: dict[str, Any]) -> None:
    console.print(final_table(f))
    if f["lost_states"]:
        console.print(f"lost by state: {f['lost_states']}")
    if f["tasks_unterminated"]:
        console.print(f"{f['tasks_unterminated']} launched tasks never ended (counted as lost)")
    busy = f.get("machine_cpu_busy_percent")
    if busy is not None and busy >= MACHINE_BOUND_PERCENT:
        console.print(
            f"note: the machine's cores were {busy:g} % busy: the load's own processes share "
            "them with the master, so these figures are bounded by this machine "
            "(docs/performance.md, 'What bounds a load test on this machine')"
        )
    failover = f.get("failover")
    if failover:
        console.print(
            f"failover: {failover['killed']} killed, {failover['new_leader']} offered after "
            f"{failover['failover_seconds']} s (led after {failover['elected_seconds']} s, "
            f"its registry read {failover.get('registry_read_seconds', 0)} s), all agents "
            f"back after {failover.get('agents_back_seconds')} s"
        )
    wave = f.get("loss_wave")
    if wave:
        console.print(
            f"loss wave: {wave['agents']} agents cut off for {wave['away_seconds']} s, "
            f"fewest connected {wave['fewest_connected']}, all back after "
            f"{wave['back_after_seconds']} s, {wave['unreachable']} UNREACHABLE; launches "
            f"in flight DROPPED (never ran): {f['lost_states'].get('DROPPED', 0)}, tasks run on "
            f"after reported lost: {f.get('tasks_revived', 0)}"
        )
    for e in f["errors"][:10]:
        console.print(f"[red]error[/red]: {e}")
