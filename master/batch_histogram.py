"""A Prometheus histogram that takes a batch of observations in one call.

``prometheus_client.Histogram.observe`` takes a lock and walks the buckets in Python for every
value: ~2 µs, which at 20k offers/s was 8 % of the master. Hot paths here produce values in
batches (every offer of a cycle), so this collector adds a whole batch with ``searchsorted`` and
``bincount``. It exposes the same series as ``Histogram`` (``_bucket{le}``, ``_sum``, ``_count``).
The master's core task is its only writer and /metrics is served on the same event loop, so no
lock is needed.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

import numpy as np
import numpy.typing as npt
from prometheus_client import CollectorRegistry
from prometheus_client.core import HistogramMetricFamily, Metric
from prometheus_client.utils import floatToGoString


def _le(bound: float) -> str:
    # The spelling prometheus_client's own histograms use ("+Inf", "0.5").
    text: str = floatToGoString(bound)  # type: ignore[no-untyped-call]
    return text


class BatchHistogram:
    def __init__(
        self,
        name: str,
        documentation: str,
        buckets: Sequence[float],
        registry: CollectorRegistry,
    ) -> None:
        if list(buckets) != sorted(set(buckets)) or not buckets:
            raise ValueError(f"{name}: buckets must be distinct and increasing")
        upper = [float(b) for b in buckets]
        if not math.isinf(upper[-1]):
            upper.append(math.inf)
        self.name = name
        self.documentation = documentation
        self._upper = np.array(upper)
        self._counts = np.zeros(len(upper), dtype=np.int64)
        self._sum = 0.0
        registry.register(self)

    def observe(self, value: float) -> None:
        self.observe_many(np.array([value]))

    def observe_many(self, values: npt.ArrayLike) -> None:
        v = np.asarray(values, dtype=np.float64).ravel()
        if not v.size:
            return
        # Bucket i counts values <= upper[i] (Prometheus' ``le``).
        where = np.searchsorted(self._upper, v, side="left")
        self._counts += np.bincount(where, minlength=len(self._upper))
        self._sum += float(v.sum())

    def describe(self) -> list[Metric]:
        return [HistogramMetricFamily(self.name, self.documentation)]

    def collect(self) -> Iterator[Metric]:
        cumulative = np.cumsum(self._counts).tolist()
        yield HistogramMetricFamily(
            self.name,
            self.documentation,
            buckets=[
                (_le(le), count) for le, count in zip(self._upper.tolist(), cumulative, strict=True)
            ],
            sum_value=self._sum,
        )
