"""Reading the master's ``/metrics``: samples by name and labels, histograms as bucket counts."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

from corral.loadtest.master_http import MasterSession

Labels = tuple[tuple[str, str], ...]


@dataclass
class Scrape:
    t: float
    samples: dict[str, dict[Labels, float]] = field(default_factory=dict)

    def value(self, name: str, **labels: str) -> float:
        """One sample; with no labels given, the sum over every label set (0 when absent)."""
        series = self.samples.get(name, {})
        if labels:
            return series.get(tuple(sorted(labels.items())), 0.0)
        return sum(series.values())

    def buckets(self, histogram: str) -> list[tuple[float, float]]:
        """(upper bound, cumulative count) of a histogram, sorted by bound."""
        out = []
        for labels, count in self.samples.get(histogram + "_bucket", {}).items():
            le = dict(labels)["le"]
            out.append((math.inf if le == "+Inf" else float(le), count))
        return sorted(out)


def parse(text: str, t: float) -> Scrape:
    s = Scrape(t)
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = tuple(sorted(sample.labels.items()))
            s.samples.setdefault(sample.name, {})[labels] = float(sample.value)
    return s


async def fetch(session: MasterSession, http: str, t: float) -> Scrape:
    async with session.get(http, "/metrics", 10) as r:
        r.raise_for_status()
        return parse(await r.text(), t)


def bucket_delta(before: Scrape | None, after: Scrape, histogram: str) -> list[tuple[float, float]]:
    """The histogram's buckets for what was observed between two scrapes."""
    old = dict(before.buckets(histogram)) if before is not None else {}
    return [(le, c - old.get(le, 0.0)) for le, c in after.buckets(histogram)]


def quantile(buckets: list[tuple[float, float]], q: float) -> float | None:
    """Prometheus' histogram_quantile: linear within the bucket; None without observations."""
    if not buckets or buckets[-1][1] <= 0:
        return None
    total = buckets[-1][1]
    rank = q * total
    prev_le, prev_count = 0.0, 0.0
    for le, count in buckets:
        if count >= rank:
            if math.isinf(le):
                return prev_le  # beyond the last finite bound: the bound is all we know
            width = count - prev_count
            frac = (rank - prev_count) / width if width > 0 else 1.0
            return prev_le + (le - prev_le) * frac
        prev_le, prev_count = le, count
    return prev_le


def beyond_last_bound(buckets: list[tuple[float, float]], q: float) -> bool:
    """Whether the ``q`` quantile lies past the histogram's last finite bound: ``quantile``
    then gives the bound, a floor and not a measure."""
    if not buckets or buckets[-1][1] <= 0 or len(buckets) < 2:
        return False
    return bool(buckets[-2][1] < q * buckets[-1][1])
