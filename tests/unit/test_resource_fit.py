"""The one resource fit test and its tolerance (corral/resources.py), which the allocator, the
master core and the SDK all ask: its scalar and array forms agree, a resource the shape does not
ask for is never looked at, and the module stays importable without numpy (the SDK's base
install imports it)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from corral.master.core.preemption import Candidate, victims_on_agent
from corral.resources import EPSILON, covers, covers_array, fits, fits_rows, lacking

CASES = [
    # (free, shape, fits, lacking)
    ((4.0, 1024.0, 0.0, 0.0), (4.0, 1024.0, 0.0, 0.0), True, []),
    ((4.0, 1024.0, 0.0, 0.0), (4.0 + EPSILON / 2, 1024.0, 0.0, 0.0), True, []),  # float noise
    ((4.0, 1024.0, 0.0, 0.0), (4.001, 1024.0, 0.0, 0.0), False, [0]),
    ((0.3, 0.0, 0.0, 0.0), (0.1 + 0.2, 0.0, 0.0, 0.0), True, []),  # 0.1 + 0.2 > 0.3 in floats
    ((4.0, 1024.0, 0.0, 0.0), (1.0, 64.0, 0.0, 1.0), False, [3]),
    # Over-committed (free below zero, tasks found at re-registration): a resource the shape
    # does not ask for is not looked at, as the allocator offers the agent's other resources.
    ((-1.0, 512.0, 0.0, 0.0), (0.0, 64.0, 0.0, 0.0), True, []),
    ((-1.0, 512.0, 0.0, 0.0), (0.5, 64.0, 0.0, 0.0), False, [0]),
]


@pytest.mark.parametrize(("free", "shape", "fit", "short"), CASES)
def test_fits_and_lacking(
    free: tuple[float, ...], shape: tuple[float, ...], fit: bool, short: list[int]
) -> None:
    assert fits(free, shape) is fit
    assert lacking(free, shape) == short
    rows = np.array([free, free])
    assert fits_rows(rows, shape).tolist() == [fit, fit]
    for k in range(4):
        assert covers_array(rows[:, k], shape[k]).tolist() == [covers(free[k], shape[k])] * 2


quantity = st.sampled_from([-1.0, 0.0, EPSILON, 0.1, 0.3, 1.0, 24.0, 4096.0]) | st.floats(
    -1.0, 100.0, allow_nan=False
)


@given(
    st.lists(st.tuples(quantity, quantity, quantity, quantity), min_size=1, max_size=8),
    st.tuples(quantity, quantity, quantity, quantity),
)
def test_the_array_forms_are_the_scalar_test(
    free: list[tuple[float, ...]], shape: tuple[float, ...]
) -> None:
    rows = np.array(free, dtype=np.float64)
    assert fits_rows(rows, shape).tolist() == [fits(r, shape) for r in free]


def test_preemption_takes_no_victim_for_a_resource_the_shape_does_not_ask_for() -> None:
    """An agent over-committed in cpus has the mem a cpus-free task asks for: it fits there
    without a victim (preemption asked its own fit test before, which read the cpus too and
    killed a task to free cpus the preemptor does not use)."""
    low = Candidate(("f", "t1"), -100, 0.0, (1.0, 64.0, 0.0, 0.0))
    assert victims_on_agent((0.0, 64.0, 0.0, 0.0), (-1.0, 512.0, 0.0, 0.0), [low], 1000, {}) == ()


def test_the_kernel_module_imports_without_numpy() -> None:
    """The SDK imports corral.resources on a base install, which has no numpy."""
    code = (
        "import sys; sys.modules['numpy'] = None\n"
        "import corral.resources as r\n"
        "assert r.fits((1.0, 0, 0, 0), (1.0, 0, 0, 0))\n"
        "import corral.frameworks.sdk\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
