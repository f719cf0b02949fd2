"""Dominant shares: the one definition (``dominant_share``), which the reference, the numpy
allocator's keys and explain, both compiled walks and the master core's role views all call,
and its array form over many rows (``dominant_shares``, the same formula vectorised: x[k] / C[k]
per fair column, the largest kept, so the values are bit-identical)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from corral.master.allocator.jit import helper


def fair_columns(
    total: Sequence[float] | npt.NDArray[np.float64], fair: Sequence[int]
) -> list[int]:
    """Resources that count: not excluded from fairness and present in the cluster."""
    return [k for k in fair if total[k] > 0]


@helper
def dominant_share(mat: Any, row: int, total: Any, cols: Any) -> float:
    """Row ``row`` of ``mat`` (an allocation per row) as a share of ``total``: the largest, over
    the fair columns ``cols`` (``fair_columns``), of mat[row][k] / total[k]; 0 with none.
    Written for numba too (the walks call it compiled, with the row index rather than a row
    view, which would cost a reference count per charge); Python callers pass lists or arrays
    (``[amounts], 0`` for one vector)."""
    s = 0.0
    for c in range(len(cols)):
        k = cols[c]
        v = mat[row][k] / total[k]
        if c == 0 or v > s:
            s = v
    return s


def dominant_shares(
    alloc: npt.NDArray[np.float64], total: npt.NDArray[np.float64], cols: list[int]
) -> npt.NDArray[np.float64]:
    """``dominant_share`` of every row of ``alloc``, vectorised."""
    if not cols:
        return np.zeros(alloc.shape[0])
    return np.asarray((alloc[:, cols] / total[cols]).max(axis=1), dtype=np.float64)
