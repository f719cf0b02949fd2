"""`corral get KIND --watch`: the table, then a row each time an object changes (kubectl get -w).

The master's Watch stream (cluster events) says when something changed; the state is then
fetched again (at most every ``MIN_INTERVAL``) and each object whose record differs from what was
last printed in something a person watches is printed again, a row of the first table's columns
(or, with ``-o json``, one JSON object per line). What moves by itself is left out of the
comparison (``MOVING``): measurements (a task's memory and cpu use, an agent's), clocks (an
agent's last heartbeat, a status's timestamp) and the offers that come and go every cycle, or a
running task would be printed again each time its memory use moved by a MiB. kubectl's watch
prints on an object's updates, and a pod's metrics are not part of the pod. A printed row still
shows the measurement as it is then. Ctrl-C ends it (exit 130); a master that goes away ends it
with exit 1.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from corral.cli.errors import CliError
from corral.cli.operator_client import stream_leader
from corral.v1 import operator_pb2

MIN_INTERVAL = 0.5  # seconds between two fetches of the state
REFRESH = 10.0  # and at least this often, events or not (a master that says nothing)

Fetch = Callable[[], tuple[list[str], list[list[str]], list[dict[str, Any]]]]


# Per kind, the fields of a record (corral.master.http.state_json) that change without anything a
# person watches changing. An agent's memory pressure level is watched (it is a condition, as a
# node's MemoryPressure is); the figures beside it are not.
MOVING: dict[str, frozenset[str]] = {
    "tasks": frozenset({"usage", "updated_at"}),
    "agents": frozenset({"usage", "last_seen", "offered"}),
    "frameworks": frozenset({"offers", "pending_updates"}),
    "roles": frozenset({"offered"}),
}


def watched(kind: str, record: dict[str, Any]) -> str:
    """The part of ``record`` whose change prints it again, as comparable text."""
    moving = MOVING.get(kind, frozenset())
    kept = {k: v for k, v in record.items() if k not in moving}
    if kind == "agents" and record.get("usage"):
        kept["memory_pressure"] = record["usage"].get("memory_pressure", "")
    return json.dumps(kept, sort_keys=True)


def _key(record: dict[str, Any]) -> str:
    ident = record.get("id") or record.get("role") or record.get("name") or ""
    return f"{record.get('framework_id', '')}/{ident}"  # task ids are per framework


def _line(row: Sequence[str], widths: Sequence[int]) -> str:
    from rich.cells import cell_len

    cells = [c + " " * max(0, w - cell_len(c)) for c, w in zip(row, widths, strict=False)]
    return " " + "  ".join(cells).rstrip()


def _widths(cols: Sequence[str], table: Sequence[Sequence[str]]) -> list[int]:
    from rich.cells import cell_len

    widths = [cell_len(c) for c in cols]
    for row in table:
        widths = [max(w, cell_len(c)) for w, c in zip(widths, row, strict=False)]
    return widths


class _EventSignal:
    """A thread reading the leading master's Watch stream (found with the stream itself: no
    other call, so no other grant); ``changed`` is set on every event."""

    def __init__(self, master: str, timeout: float) -> None:
        self.changed = threading.Event()
        self.ended = ""
        self._master = master
        self._timeout = timeout
        self._thread = threading.Thread(target=self._run, daemon=True, name="corral-watch")
        self._thread.start()

    def _run(self) -> None:
        try:
            stream = stream_leader(
                self._master, "Watch", operator_pb2.WatchRequest(), self._timeout
            )
            for _ in stream:
                self.changed.set()
            self.ended = "the master ended the watch"
        except CliError as exc:  # "master at ADDRESS: why"
            self.ended = f"the watch ended: {exc}"
        self.changed.set()


def watch(
    kind: str,
    master: str,
    timeout: float,
    fetch: Fetch,
    first: tuple[list[str], list[list[str]], list[dict[str, Any]]],
    as_json: bool,
) -> int:
    """Print changes after ``first`` (already printed) until Ctrl-C or the master goes."""
    signal = _EventSignal(master, timeout)
    cols, table, records = first
    widths = _widths(cols, table)
    last = {_key(r): watched(kind, r) for r in records}
    while True:
        signal.changed.wait(REFRESH)
        signal.changed.clear()
        if signal.ended:
            raise CliError(signal.ended)
        time.sleep(MIN_INTERVAL)  # events come in bursts: one fetch for the burst
        _, table, records = fetch()
        for row, record in zip(table, records, strict=True):
            key, text = _key(record), watched(kind, record)
            if last.get(key) == text:
                continue
            last[key] = text
            print(json.dumps(record) if as_json else _line(row, widths), flush=True)
        sys.stdout.flush()
