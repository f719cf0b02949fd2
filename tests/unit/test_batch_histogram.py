"""The batched histogram exposes what prometheus_client's Histogram would for the same
observations (bucket edges included: a value equal to a bound counts in that bound's bucket;
the sum up to rounding)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, Histogram, generate_latest

from corral.master.batch_histogram import BatchHistogram

BUCKETS = (0.001, 0.01, 0.1, 0.5, 1.0, 5.0)


def exposition(registry: CollectorRegistry) -> list[str]:
    text = generate_latest(registry).decode()
    return [line for line in text.splitlines() if "_created" not in line]


@given(
    st.lists(
        st.lists(
            st.one_of(st.sampled_from(BUCKETS), st.floats(0.0, 20.0, allow_nan=False)),
            max_size=20,
        ),
        max_size=5,
    )
)
def test_same_exposition_as_prometheus_histogram(batches: list[list[float]]) -> None:
    ours, theirs = CollectorRegistry(), CollectorRegistry()
    batch_hist = BatchHistogram("x_seconds", "doc", BUCKETS, ours)
    plain = Histogram("x_seconds", "doc", buckets=BUCKETS, registry=theirs)
    for batch in batches:
        batch_hist.observe_many(batch)
        for v in batch:
            plain.observe(v)
    mine, reference = exposition(ours), exposition(theirs)
    # The sum is added per batch here, per value there: equal up to rounding.
    sums = [i for i, line in enumerate(reference) if line.startswith("x_seconds_sum")]
    for i in sums:
        assert float(mine[i].split()[-1]) == pytest.approx(float(reference[i].split()[-1]))
        mine[i] = reference[i] = "sum"
    assert mine == reference


def test_unsorted_buckets_are_refused() -> None:
    with pytest.raises(ValueError, match="increasing"):
        BatchHistogram("y", "doc", (1.0, 0.5), CollectorRegistry())
