"""A failing part of the allocation tick must not fail it forever (issue #30, item 3).

A handler that raises costs only its event (the shell refuses it and goes on), but the
allocation tick runs again every interval on the same state: an input the tick cannot handle
once, it cannot handle ever, and no framework is offered anything while it stands. So the
tick's work over demands is done in units, each naming the demand it is about, and a unit that
raises is isolated instead of taking the tick down.

Rules:
1. The units are the passes over demands: one demand's preemption search (nominations.py),
   one gang's cut (allocation_tick.py), one demand's why-pending test (pending.py). A unit
   computes before it changes anything; ``run`` runs it and, if it raises, quarantines its
   demand and returns None: the pass skips it and goes on with the next.
2. A quarantined demand is skipped by every pass (``holds``) for ``BACKOFF`` seconds, doubled
   for each failure in a row up to ``MAX_BACKOFF``, then tried again; a unit of it that runs
   cleanly clears its record. Each failure is a ``demand_quarantined`` cluster event (reason
   ``Quarantined``) naming the demand, the pass and the error, counted in ``failures`` (the
   shell's ``corral_quarantined_total``). The framework is told nothing: its demand simply
   waits, as an unplaceable one does, and ``corral events --reason Quarantined`` says why.
3. Records are forgotten with their framework, and once their backoff has passed twice over.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from corral import events as cluster_events
from corral.limits import echo
from corral.master.core import commands as cmd

if TYPE_CHECKING:
    from corral.master.core import events as ev
    from corral.master.core.state import CoreState

T = TypeVar("T")
BACKOFF = 30.0
MAX_BACKOFF = 1800.0
Key = tuple[str, str]  # (framework id, demand name)


@dataclass(slots=True)
class _Record:
    failures: int
    until: float
    backoff: float


class Quarantine:
    def __init__(self) -> None:
        self._records: dict[Key, _Record] = {}
        self.events: list[cmd.ClusterEvent] = []  # made during the event in hand
        self.failures: dict[str, int] = {}  # by pass, since the shell last took them

    def holds(self, framework_id: str, demand: str, now: float) -> bool:
        r = self._records.get((framework_id, demand))
        return r is not None and now < r.until

    def run(
        self,
        core: CoreState,
        e: ev.Event,
        what: str,
        framework_id: str,
        demand: str,
        unit: Callable[..., T],
        *args: Any,
    ) -> T | None:
        """Rule 1: ``unit(*args)``, or None after quarantining the demand if it raised."""
        key = (framework_id, demand)
        try:
            result = unit(*args)
        except Exception as exc:  # the point: any bug in a unit costs its demand only
            self._failed(core, e, what, key, exc)
            return None
        if key in self._records and e.now >= self._records[key].until:
            del self._records[key]  # tried again after its backoff, and it went through
        return result

    def _failed(self, core: CoreState, e: ev.Event, what: str, key: Key, exc: Exception) -> None:
        had = self._records.get(key)
        backoff = BACKOFF if had is None else min(MAX_BACKOFF, had.backoff * 2)
        failures = 1 if had is None else had.failures + 1
        self._records[key] = _Record(failures, e.now + backoff, backoff)
        self.failures[what] = self.failures.get(what, 0) + 1
        self.events.append(
            core.cluster_event(
                e,
                "demand_quarantined",
                cluster_events.demand_subject(*key),
                f"{what} failed ({type(exc).__name__}: {echo(str(exc))}); the demand is skipped "
                f"for {backoff:g}s (failure {failures} in a row), the cluster goes on",
            )
        )

    def take_events(self) -> list[cmd.ClusterEvent]:
        out, self.events = self.events, []
        return out

    def take_failures(self) -> dict[str, int]:
        out, self.failures = self.failures, {}
        return out

    def forget(self, framework_id: str) -> None:
        for key in [k for k in self._records if k[0] == framework_id]:
            del self._records[key]

    def sweep(self, now: float) -> None:
        """Rule 3."""
        for key in [k for k, r in self._records.items() if now >= r.until + 2 * r.backoff]:
            del self._records[key]

    def __len__(self) -> int:
        return len(self._records)
