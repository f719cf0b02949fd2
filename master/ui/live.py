"""What keeps the page live: a ring buffer of utilisation samples, and the Server-Sent Events
stream that carries them with the cluster events.

The stream is fed by ``MasterRuntime.watch()``, the same watch the Operator ``Watch`` RPC (and
so ``corral events --follow``) reads. Events are sent in batches every ``FLUSH_SECONDS``, at
most ``MAX_EVENTS_PER_FLUSH`` each (the newest; the message says how many were left out): a
master launching thousands of tasks a second ends thousands a second too, and a page cannot
read them one by one any more than the master should encode them one by one. A watch the
runtime dropped because it filled (a stalled reader) is replaced, and the page told so.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import deque
from typing import Any

from aiohttp import web

from corral import events as cluster_events
from corral.logging import get_logger
from corral.master.runtime import MasterRuntime
from corral.master.ui import cluster, params
from corral.master.ui.common import event_json
from corral.supervise import spawn

log = get_logger("corral.master.ui")

# What a stream without events reads instead of a watch: always empty, never registered.
_NO_WATCH: asyncio.Queue[Any] = asyncio.Queue()

SAMPLE_INTERVAL = 5.0  # seconds between samples, at least
COST_FACTOR = 100  # ... and at least 100 times what the last one cost
SAMPLES_KEPT = 180  # 15 minutes of them
FLUSH_SECONDS = 0.5
MAX_EVENTS_PER_FLUSH = 250
KEEPALIVE_SECONDS = 15.0
STREAM_PARAMS = ("reason", "events")


class Samples:
    """The last ``size`` samples (cluster.sample, with ``t`` and the launches counted so far),
    taken every ``interval`` seconds (or 100 times what the last one cost, if longer) from the
    core's task while the master leads. At most one
    query waits in the core's inbox at a time: a standby's runtime does not run, and its
    sampler waits on its first query rather than pile more behind it."""

    def __init__(
        self, runtime: MasterRuntime, interval: float = SAMPLE_INTERVAL, size: int = SAMPLES_KEPT
    ) -> None:
        self.runtime = runtime
        self.interval = interval
        self.items: deque[dict[str, Any]] = deque(maxlen=size)
        self.seq = 0  # samples taken so far: a stream sends one when it grows
        self.cost = 0.0  # seconds the last sample held the core's task (docs/ui.md, "Cost")
        # Seconds the master spent answering the UI's JSON endpoints (on its core's task, and
        # encoding), since it started: what the pages open cost it.
        self.served = 0.0
        self._task: asyncio.Task[Any] | None = None

    def start(self) -> None:
        self._task = spawn(self._run(), "ui-sampler", log, forever=True)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        while True:
            try:
                await self.take()
            except Exception as exc:  # a bug in a view: said, and the chart goes on
                log.error("ui_sample_failed", error=repr(exc), exc_info=exc)
            # At most 1 % of the core's time, however large the cluster or busy the machine.
            await asyncio.sleep(max(self.interval, COST_FACTOR * self.cost))

    async def take(self) -> dict[str, Any]:
        def run(core: Any) -> dict[str, Any]:
            started = time.perf_counter()
            point = cluster.sample(core)
            self.cost = time.perf_counter() - started
            return point

        point = await self.runtime.query(run)
        point["t"] = self.runtime.clock()
        point["launched"] = launched(self.runtime)
        self.items.append(point)
        self.seq += 1
        return point

    def json(self) -> dict[str, Any]:
        return {
            "interval": self.interval,
            "kept": self.items.maxlen,
            "cost_seconds": self.cost,
            "served_seconds": self.served,
            "samples": list(self.items),
        }


def launched(runtime: MasterRuntime) -> float:
    """Tasks sent to agents since the master started (the page differentiates: launches/s)."""
    for metric in runtime.metrics.tasks_launched.collect():
        for s in metric.samples:
            if s.name.endswith("_total"):
                return float(s.value)
    return 0.0


def reasons_of(query: dict[str, str]) -> frozenset[str]:
    """``reason=A,B``: only those reasons' events; each must be one (ValueError naming it)."""
    text = query.get("reason", "")
    if not text:
        return frozenset()
    return frozenset(cluster_events.check_reason(r.strip()) for r in text.split(","))


def _message(kind: str, data: Any) -> bytes:
    return f"event: {kind}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


async def stream(
    request: web.Request, runtime: MasterRuntime, samples: Samples, closing: asyncio.Event
) -> web.StreamResponse:
    """``GET /api/v1/stream``: ``hello`` once, then ``sample`` (each new sample) and ``events``
    (``{"events": [...], "skipped": N, "lost": bool}``) messages until the client goes away or
    the master stops; a comment line every KEEPALIVE_SECONDS of silence. With
    ``events=false`` no events: the master does not watch for this stream at all (a page that
    shows no events costs it nothing per event)."""
    try:
        query = params.query_of(request.query.items(), STREAM_PARAMS)
        reasons = reasons_of(query)
        with_events = params.boolean(query, "events", True)
    except ValueError as exc:
        return web.json_response({"error": str(exc)}, status=400)
    response = web.StreamResponse(
        headers={
            "Content-Type": "text/event-stream",
            "Cache-Control": "no-cache",
            "X-Accel-Buffering": "no",  # a proxy in front must not hold the stream back
        }
    )
    await response.prepare(request)
    watch = runtime.watch() if with_events else _NO_WATCH
    loop = asyncio.get_running_loop()
    try:
        hello = {
            "master_id": runtime.master_id,
            "flush_seconds": FLUSH_SECONDS,
            "max_events": MAX_EVENTS_PER_FLUSH,
            "sample_interval": samples.interval,
            "reasons": list(cluster_events.REASONS),
        }
        await response.write(_message("hello", hello))
        sent_seq = 0
        last_write = loop.time()
        while not closing.is_set():
            lost = with_events and watch.full()  # the runtime drops a full watch: renew it
            batch = []
            while not watch.empty():
                e = watch.get_nowait()
                if not reasons or e.reason in reasons:
                    batch.append(e)
            if lost:
                runtime.unwatch(watch)
                watch = runtime.watch()
            out = b""
            if batch or lost:
                skipped = max(0, len(batch) - MAX_EVENTS_PER_FLUSH)
                events = [event_json(e) for e in batch[skipped:]]
                out += _message("events", {"events": events, "skipped": skipped, "lost": lost})
            if samples.seq != sent_seq and samples.items:
                sent_seq = samples.seq
                out += _message("sample", samples.items[-1])
            if not out and loop.time() - last_write >= KEEPALIVE_SECONDS:
                out = b": keepalive\n\n"
            if out:
                await response.write(out)
                last_write = loop.time()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(FLUSH_SECONDS):
                    await closing.wait()
    except (ConnectionResetError, ConnectionError):
        pass  # the page went away
    finally:
        runtime.unwatch(watch)
    return response
