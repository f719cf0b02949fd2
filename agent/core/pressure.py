"""Memory pressure: when an agent is under it, and when it must evict. Pure, time as input.

``available`` is the agent's memory (its ``mem`` resource) less what its tasks use, as
measured. The rules (kubelet's eviction thresholds):
1. A hard threshold (``--eviction-hard memory.available<X``): available below it is pressure
   at once, and the agent evicts until the projected available is back at the threshold.
2. A soft threshold (``--eviction-soft memory.available<Y``, ``--eviction-soft-grace S``):
   available below it is pressure at once, but the agent evicts only once it has stayed below
   for S seconds; going back above it starts the grace over.
3. The condition (what the agent reports, and the master's placement rule) is ``hard``,
   ``soft`` or none. Once available is back above every threshold it stays for
   ``--eviction-pressure-transition`` seconds more (kubelet's pressure transition period), so
   the condition does not flap while evicted tasks' memory comes back and new work arrives.
4. ``projected`` is what available will be once the tasks already being killed are gone: the
   eviction target counts them as freed, so one pressure does not evict twice.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

NONE, SOFT, HARD = "", "soft", "hard"

_THRESHOLD = re.compile(r"^\s*memory\.available\s*<\s*([0-9.]+)\s*(Mi|Gi|%)?\s*$")


def parse_threshold(text: str, mem_total: float) -> float:
    """MiB of available memory in ``memory.available<X`` (kubelet's form): X in MiB (``256``
    or ``256Mi``), GiB (``1Gi``) or a percentage of the agent's mem (``10%``). ValueError
    naming the problem otherwise."""
    m = _THRESHOLD.match(text)
    if m is None:
        raise ValueError(
            f"{text!r} is not memory.available<X (X in MiB, e.g. 256 or 256Mi, 1Gi, or 10%)"
        )
    try:
        value = float(m.group(1))
    except ValueError:
        raise ValueError(f"{text!r}: {m.group(1)!r} is not a number") from None
    unit = m.group(2) or "Mi"
    if unit == "%":
        if not 0 < value < 100:
            raise ValueError(f"{text!r}: a percentage must be between 0 and 100")
        value = mem_total * value / 100
    elif unit == "Gi":
        value *= 1024
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{text!r}: the threshold must be more than 0")
    if value >= mem_total:
        raise ValueError(
            f"{text!r}: {value:g} MiB is not below the agent's mem ({mem_total:g} MiB): "
            "it would always be under pressure"
        )
    return value


@dataclass(frozen=True, slots=True)
class Thresholds:
    """MiB of available memory below which each threshold is crossed (None: not set)."""

    hard: float | None = None
    soft: float | None = None
    soft_grace: float = 0.0
    transition: float = 0.0

    @property
    def enabled(self) -> bool:
        return self.hard is not None or self.soft is not None


@dataclass(frozen=True, slots=True)
class Verdict:
    level: str  # the condition: NONE, SOFT or HARD
    since: float  # when the condition began (0: none)
    need_mib: float  # what eviction must free now (0: nothing)
    threshold: str  # the threshold eviction answers to ("hard"/"soft"), "" when none
    message: str  # the pressure and its figures, for the report and the eviction's status


class PressureTracker:
    def __init__(self, thresholds: Thresholds) -> None:
        self.t = thresholds
        self.level = NONE
        self.since = 0.0
        self._soft_since: float | None = None
        self._clear_since: float | None = None

    def observe(self, available: float, projected: float, now: float) -> Verdict:
        t = self.t
        below_hard = t.hard is not None and available < t.hard
        below_soft = t.soft is not None and available < t.soft
        if below_soft:
            if self._soft_since is None:
                self._soft_since = now
        else:
            self._soft_since = None
        level = HARD if below_hard else SOFT if below_soft else NONE
        if level:
            self._clear_since = None
            if not self.level:
                self.since = now
            self.level = level
        elif self.level:
            # Rule 3: held for the transition period after the last reading below.
            if self._clear_since is None:
                self._clear_since = now
            if now - self._clear_since >= t.transition:
                self.level, self.since, self._clear_since = NONE, 0.0, None
        need, threshold = 0.0, ""
        if below_hard and t.hard is not None and projected < t.hard:
            need, threshold = t.hard - projected, HARD
        elif (
            below_soft
            and t.soft is not None
            and self._soft_since is not None
            and now - self._soft_since >= t.soft_grace
            and projected < t.soft
        ):
            need, threshold = t.soft - projected, SOFT
        return Verdict(self.level, self.since, need, threshold, self._message(available, now))

    def _message(self, available: float, now: float) -> str:
        t = self.t
        if t.hard is not None and available < t.hard:
            return f"memory pressure (hard): available {available:.0f} MiB < {t.hard:.0f} MiB"
        if t.soft is not None and available < t.soft and self._soft_since is not None:
            below = now - self._soft_since
            return (
                f"memory pressure (soft): available {available:.0f} MiB < {t.soft:.0f} MiB "
                f"for {below:.1f} s (grace {t.soft_grace:g} s)"
            )
        if self.level:
            return f"memory pressure ({self.level}) clearing: available {available:.0f} MiB"
        return ""
