"""Arrays that grow by doubling, so adding agents or frameworks never reallocates per cycle."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt


def grow_rows(array: npt.NDArray[Any], rows: int, fill: Any) -> npt.NDArray[Any]:
    """A copy of ``array`` with at least ``rows`` rows (doubling), new rows set to ``fill``."""
    if rows <= array.shape[0]:
        return array
    new_rows = max(rows, 2 * array.shape[0], 1)
    out = np.full((new_rows, *array.shape[1:]), fill, dtype=array.dtype)
    out[: array.shape[0]] = array
    return out


def grow_cols(array: npt.NDArray[Any], cols: int, fill: Any) -> npt.NDArray[Any]:
    """A copy of the 2-D ``array`` with at least ``cols`` columns (doubling)."""
    if cols <= array.shape[1]:
        return array
    new_cols = max(cols, 2 * array.shape[1], 1)
    out = np.full((array.shape[0], new_cols), fill, dtype=array.dtype)
    out[:, : array.shape[1]] = array
    return out


class RowIndex:
    """Dense row numbers for string ids; freed rows are reused (lowest first).

    ``table()`` hands out the id list itself; the next change copies it first, so a table
    handed out (inside a cycle's plan) keeps naming the rows as they were."""

    def __init__(self) -> None:
        self.rows: dict[str, int] = {}
        self.ids: list[str | None] = []
        self._free: list[int] = []
        self._shared = False

    def table(self) -> list[str | None]:
        self._shared = True
        return self.ids

    def _writable(self) -> None:
        if self._shared:
            self.ids = list(self.ids)
            self._shared = False

    def add(self, key: str) -> int:
        self._writable()
        if self._free:
            self._free.sort(reverse=True)
            row = self._free.pop()
            self.ids[row] = key
        else:
            row = len(self.ids)
            self.ids.append(key)
        self.rows[key] = row
        return row

    def remove(self, key: str) -> int:
        self._writable()
        row = self.rows.pop(key)
        self.ids[row] = None
        self._free.append(row)
        return row

    @property
    def size(self) -> int:
        """Rows in use or freed (the high-water mark): arrays need at least this many."""
        return len(self.ids)
