"""Suppressed frameworks (SUPPRESS) get no offers until they revive."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from corral.master.allocator.options import REASON_SUPPRESSED

REASON = REASON_SUPPRESSED


def active(
    alive: npt.NDArray[np.bool_], suppressed: npt.NDArray[np.bool_]
) -> npt.NDArray[np.bool_]:
    """Frameworks that may be offered anything at all, by row."""
    return alive & ~suppressed
