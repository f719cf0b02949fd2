"""A PNG of throughput and latency over time (matplotlib, Agg: no display needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # the backend is chosen first


def plot(series: dict[str, list[float]], figures: dict[str, Any], path: Path) -> None:
    p = figures["parameters"]
    fig, (ax1, ax2, ax3) = plt.subplots(3, 1, figsize=(10, 9), sharex=True)
    fig.suptitle(
        f"corral loadtest: {p['mode']}, {p['agents']} agents x {p['frameworks']} frameworks, "
        f"allocation interval {p['allocation_interval']:g} s"
    )
    t = series["t"]
    ax1.plot(t, series["offers"], label="offers/s")
    ax1.plot(t, series["running"], label="tasks RUNNING/s")
    ax1.plot(t, series["finished"], label="completions/s")
    ax1.axvspan(0, p["warmup"], color="grey", alpha=0.15, label="warm-up")
    ax1.set_ylabel("per second")
    ax1.legend(loc="upper right")
    ax2.plot(t, series["p50_ms"], label="accept→RUNNING p50")
    ax2.plot(t, series["p99_ms"], label="accept→RUNNING p99")
    ax2.plot(series["cycle_t"], series["cycle_p99_ms"], label="allocation cycle p99")
    ax2.set_ylabel("ms")
    ax2.set_yscale("log")
    ax2.legend(loc="upper right")
    ax3.plot(series["cpu_t"], series["cpu"], label="master CPU % (one core = 100)")
    ax3.set_ylabel("%")
    ax3.set_xlabel("seconds since the frameworks subscribed")
    ax3.legend(loc="upper right")
    for ax in (ax1, ax2, ax3):
        ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
