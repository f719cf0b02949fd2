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

The middle generation is collected after so many young collections, walking every survivor
of them with the GIL held. A master registering 50,000 agents (~115 objects each, mostly
gRPC's and asyncio's per stream) after 20 young collections walked them in one stall of
3.0-3.9 s (2 alternated runs, issue #48): longer than a leader's ZooKeeper session of 5 s
allows its client thread to stay silent after a ping. After 2 it walks them in eight of
0.58-1.20 s, for ~2.5 s more collector time over the registration (12.3-13.2 s against
9.8-10.8 s), the registration no slower. The simulated agents' hosts keep 20: at 2 their
processes (12,500 agents each) added collections of the middle generation of up to 3 s and
3-4 s of collector time each, and their pauses lose no leadership.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

MASTER = (200_000, 2, 100)
AGENT_HOST = (200_000, 20, 100)


def tune_gc(thresholds: tuple[int, int, int]) -> None:
    gc.set_threshold(*thresholds)


@contextmanager
def tuned_gc() -> Iterator[None]:
    """The master's settings for a while (a benchmark run in-process), then the old ones."""
    old = gc.get_threshold()
    tune_gc(MASTER)
    try:
        yield
    finally:
        gc.set_threshold(*old)
