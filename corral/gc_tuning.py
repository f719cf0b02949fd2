"""CPython collector settings for processes that hold many long-lived objects.

The master keeps hundreds of thousands of long-lived objects (agents, tasks, offers), and an
agent host process thousands of simulated agents: with CPython's default thresholds a full
collection every few seconds walks all of them and stalls the event loop (the master's
allocation cycle p99 was ~0.9 s at 10k agents). Young objects are collected less often.

How much less: a young collection walks every object allocated since the last one that is still
alive. At 5,000 launches/s that is each task in flight and each ended task kept for operators:
at a threshold of 50,000 one came every ~3 s, stalled the master 37-41 ms and freed nothing
(refcounting frees nearly everything here). A stall every few seconds that holds up every
launch in flight for ~40 ms put 1-2 % of launches past a 50 ms target by itself (issue #18).
The young threshold counts allocations minus deallocations, so a process whose objects come
and go at a steady rate hardly moves it: at 200,000 young collections come while the heap
grows (start-up, 10,000 agents registering: 100-470 ms each then), seldom in a steady state,
and cyclic garbage, which never deallocates, still triggers one after 200,000 objects.
Collecting on a clock instead (every 0.1 s) made young collections short but walked every task
in flight at the next generation too: 15-40 ms stalls every 0.5 s, and five times the CPU.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

THRESHOLDS = (200_000, 20, 100)


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
