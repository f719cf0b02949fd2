"""Dominant shares, vectorised and scalar; both compute x[k] / C[k] and take the max, so they
give bit-identical results to the reference."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

Vec = list[float]


def fair_columns(total: npt.NDArray[np.float64], fair: tuple[int, ...]) -> list[int]:
    """Resources that count: not excluded from fairness and present in the cluster."""
    return [k for k in fair if total[k] > 0]


def shares(
    alloc: npt.NDArray[np.float64], total: npt.NDArray[np.float64], cols: list[int]
) -> npt.NDArray[np.float64]:
    if not cols:
        return np.zeros(alloc.shape[0])
    return np.asarray((alloc[:, cols] / total[cols]).max(axis=1), dtype=np.float64)


def share(alloc: Vec, total: Vec, cols: list[int]) -> float:
    return max((alloc[k] / total[k] for k in cols), default=0.0)
