"""When the simulated agents of one process start: paced by the master's acknowledgements.

Thousands of agents started at once open thousands of streams the master answers one by one;
the later ones wait minutes, and agents registered early miss their heartbeats' slots behind
the queue (issue #48: 11,518 of 50,000 agents registered in 8 minutes, 128 already
UNREACHABLE). The ramp starts agents as registrations come back instead, as a TCP sender does:

1. At most ``window`` started agents are unregistered at a time ("in flight").
2. Each registration acknowledged within ``target`` seconds of its agent's start widens the
   window: by one until the first slow answer (the window doubles per round trip: slow start),
   by ``1 / window`` after (one more agent in flight per window's worth of quick answers).
   One answered later than ``target`` halves it, at most once per ``target`` (the queue it
   saw was built before the last cut), never below ``min_window``, never above
   ``max_window``.
3. An agent not registered ``stall`` seconds after its start leaves the flight (it goes on
   trying on its own: its connection's backoff) and halves the window: a master refusing or
   not answering must not hold the rest back for ever.

Pure: time comes in as ``now``; the caller starts agents and reports their registrations.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field


@dataclass
class RegistrationRamp:
    total: int  # agents to start
    window: float = 64.0
    min_window: float = 8.0
    max_window: float = 2048.0
    target: float = 1.0  # seconds from start to REGISTERED counted as a quick answer
    stall: float = 30.0
    started: int = 0
    registered: int = 0
    stalled: int = 0
    # Agents started and not yet registered, by index, with their start times (oldest first).
    _flight: OrderedDict[int, float] = field(default_factory=OrderedDict)
    _last_cut: float = float("-inf")
    _slow_start: bool = True

    def __post_init__(self) -> None:
        if not 1 <= self.min_window <= self.window <= self.max_window:
            raise ValueError(
                f"the window must be 1 <= min {self.min_window:g} <= "
                f"{self.window:g} <= max {self.max_window:g}"
            )
        if self.target <= 0 or self.stall <= 0:
            raise ValueError("target and stall must be > 0 seconds")

    @property
    def in_flight(self) -> int:
        return len(self._flight)

    @property
    def done(self) -> bool:
        """Every agent started (registered or not)."""
        return self.started >= self.total

    def to_start(self, now: float) -> range:
        """The indexes of the agents to start now (rule 1), marked started at ``now``."""
        self.expire(now)
        room = max(0, int(self.window) - len(self._flight))
        first = self.started
        self.started = min(self.total, first + room)
        for i in range(first, self.started):
            self._flight[i] = now
        return range(first, self.started)

    def acknowledged(self, index: int, now: float) -> None:
        """Agent ``index`` registered (rule 2); a later re-registration is ignored."""
        started_at = self._flight.pop(index, None)
        if started_at is None:
            return
        self.registered += 1
        if now - started_at <= self.target:
            step = 1.0 if self._slow_start else 1.0 / self.window
            self.window = min(self.max_window, self.window + step)
        else:
            self._cut(now)

    def expire(self, now: float) -> None:
        """Rule 3: agents in flight longer than ``stall`` leave it."""
        while self._flight:
            index, started_at = next(iter(self._flight.items()))
            if now - started_at < self.stall:
                break
            del self._flight[index]
            self.stalled += 1
            self._cut(now)

    def next_expiry(self) -> float | None:
        """When the oldest agent in flight stalls (rule 3), or None with none in flight."""
        if not self._flight:
            return None
        return next(iter(self._flight.values())) + self.stall

    def _cut(self, now: float) -> None:
        self._slow_start = False
        if now - self._last_cut < self.target:
            return
        self._last_cut = now
        self.window = max(self.min_window, self.window / 2)
