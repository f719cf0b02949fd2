"""How much a preemptor may preempt: a budget of victims per framework, and a backoff for a
demand whose room went unused (issue #30, item 5: withdrawing and setting one high-priority
demand every 5 s killed 96 tasks of another tenant in 60 s while it launched nothing).

Rules (nominations.py asks ``allowance`` before it looks for victims and calls ``spent``,
``used`` and ``unused`` as nominations go):
1. Each preemptor (framework) holds a bucket of ``preemption_victims_burst`` victims, refilled
   at ``preemption_victims_per_minute``; the victims chosen for its demands are taken from it,
   and a framework whose bucket holds less than one victim does not preempt. The cycle's own
   bound (``preemption_max_victims_per_cycle``, over all demands) holds as before.
2. A nomination that ends unused (its offer declined, rescinded at its deadline, or its demand
   withdrawn or changed so that nothing was launched in its room) is a strike against its
   (framework, demand name): that demand preempts nothing for ``preemption_unused_backoff``
   seconds, doubled with each strike in a row, at most ``MAX_BACKOFF_DOUBLINGS`` times. An offer
   of the room that launches tasks clears the strikes. Strikes are kept by demand name, so
   withdrawing a demand and setting it again does not clear them; the victims of an unused
   nomination are not given back to the bucket.
3. A framework's budget and strikes are forgotten when it is removed; a strike is forgotten
   once its backoff is over and as long again has passed without another.
"""

from __future__ import annotations

from dataclasses import dataclass

from corral.resources import EPSILON

MAX_BACKOFF_DOUBLINGS = 5  # 30 s doubled five times: 16 minutes


@dataclass(slots=True)
class _Bucket:
    tokens: float
    at: float


@dataclass(slots=True)
class _Strikes:
    count: int
    until: float  # no preemption for the demand before this
    backoff: float  # the last backoff given


class PreemptionBudget:
    def __init__(self, burst: int, per_minute: float, backoff: float) -> None:
        self.burst = float(burst)
        self.rate = per_minute / 60.0
        self.backoff = backoff
        self._buckets: dict[str, _Bucket] = {}
        self._strikes: dict[tuple[str, str], _Strikes] = {}

    def _bucket(self, framework_id: str, now: float) -> _Bucket:
        b = self._buckets.get(framework_id)
        if b is None:
            b = self._buckets[framework_id] = _Bucket(self.burst, now)
        elif now > b.at:
            b.tokens = min(self.burst, b.tokens + (now - b.at) * self.rate)
            b.at = now
        return b

    def allowance(self, framework_id: str, demand: str, now: float) -> int:
        """Victims the demand may take now (rules 1 and 2): 0 while it backs off."""
        s = self._strikes.get((framework_id, demand))
        if s is not None and now < s.until:
            return 0
        return int(self._bucket(framework_id, now).tokens + EPSILON)

    def blocked_until(self, framework_id: str, demand: str) -> float | None:
        s = self._strikes.get((framework_id, demand))
        return None if s is None else s.until

    def spent(self, framework_id: str, victims: int, now: float) -> None:
        b = self._bucket(framework_id, now)
        b.tokens = max(0.0, b.tokens - victims)

    def used(self, framework_id: str, demand: str) -> None:
        """Rule 2: the room launched tasks; the demand's strikes are cleared."""
        self._strikes.pop((framework_id, demand), None)

    def unused(self, framework_id: str, demand: str, now: float) -> float:
        """Rule 2: a strike; returns the backoff given (seconds)."""
        key = (framework_id, demand)
        s = self._strikes.get(key)
        if s is None or now >= s.until + s.backoff:  # rule 3: an old strike is forgotten
            backoff = self.backoff
            count = 1
        else:
            count = s.count + 1
            backoff = self.backoff * 2 ** min(count - 1, MAX_BACKOFF_DOUBLINGS)
        self._strikes[key] = _Strikes(count, now + backoff, backoff)
        return backoff

    def forget(self, framework_id: str) -> None:
        """Rule 3: the framework is removed."""
        self._buckets.pop(framework_id, None)
        for key in [k for k in self._strikes if k[0] == framework_id]:
            del self._strikes[key]

    def sweep(self, now: float) -> None:
        """Rule 3 for strikes long over (the tick calls it now and then)."""
        for key in [k for k, s in self._strikes.items() if now >= s.until + s.backoff]:
            del self._strikes[key]

    def __len__(self) -> int:
        return len(self._buckets) + len(self._strikes)
