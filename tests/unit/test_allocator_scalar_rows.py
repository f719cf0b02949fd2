"""check_scalar_rows: the [n, 4] array of a batch of rows, or the error naming the bad one."""

from __future__ import annotations

import math

import numpy as np
import pytest

from corral.master.allocator.options import check_scalar_rows


def test_rows_of_lists_or_tuples_become_one_array() -> None:
    rows = [[1.0, 2.0, 3.0, 0.0], (4.0, 5.0, 6.0, 1.0)]
    out = check_scalar_rows("recover", rows)
    assert out.shape == (2, 4)
    assert out.tolist() == [[1.0, 2.0, 3.0, 0.0], [4.0, 5.0, 6.0, 1.0]]
    assert check_scalar_rows("recover", []).shape == (0, 4)
    one = check_scalar_rows("recover", [(1, 2.5, 0, 0)])  # one row: checked in Python
    assert one.dtype == np.float64 and one.tolist() == [[1.0, 2.5, 0.0, 0.0]]


@pytest.mark.parametrize(
    "rows",
    [
        [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0, 8.0]],  # 8 numbers, but not two rows of 4
        [[1.0, 2.0, 3.0, -1.0]],
        [[1.0, math.nan, 3.0, 0.0]],
        [[1.0, math.inf, 3.0, 0.0]],
    ],
)
def test_a_bad_row_is_refused(rows: list[list[float]]) -> None:
    with pytest.raises(ValueError, match="recover"):
        check_scalar_rows("recover", rows)


def test_same_values_as_numpy() -> None:
    rng = np.random.default_rng(7)
    rows = rng.uniform(0, 100, size=(500, 4)).tolist()
    assert np.array_equal(check_scalar_rows("recover", rows), np.array(rows))
