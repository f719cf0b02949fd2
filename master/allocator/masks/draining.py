"""Agents being drained are offered to nobody (their tasks are on their way out)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from corral.master.allocator.options import REASON_DRAINING

REASON = REASON_DRAINING


def offerable(
    alive: npt.NDArray[np.bool_], draining: npt.NDArray[np.bool_]
) -> npt.NDArray[np.bool_]:
    """Agents whose resources may be offered, by row."""
    return alive & ~draining
