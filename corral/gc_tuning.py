"""CPython collector settings for processes that hold many long-lived objects.

The master keeps hundreds of thousands of long-lived objects (agents, tasks, offers), and an
agent host process thousands of simulated agents: with CPython's default thresholds a full
collection every few seconds walks all of them and stalls the event loop (the master's
allocation cycle p99 was ~0.9 s at 10k agents). Young objects are collected less often.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

THRESHOLDS = (50_000, 20, 100)


def tune_gc() -> None:
    gc.set_threshold(*THRESHOLDS)


@contextmanager
def tuned_gc() -> Iterator[None]:
    """The master's settings for a while (a benchmark run in-process), then the old ones."""
    old = gc.get_threshold()
    tune_gc()
    try:
        yield
    finally:
        gc.set_threshold(*old)
