"""The training problem: data-parallel linear regression, small enough to run in a blink.

The data are y = X w* + noise, with w* drawn from the seed alone (every rank agrees on it) and
each rank's shard X, noise drawn from (seed, rank), so a restarted gang sees the same data.
The loss is the mean squared error over all shards; at the least-squares optimum it is about
the noise variance (``NOISE**2``), which is what "converged" is measured against.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

DIM = 16
SHARD = 256
NOISE = 0.1
LEARNING_RATE = 0.1

Array = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Shard:
    x: Array
    y: Array


def true_weights(seed: int) -> Array:
    return np.random.default_rng([seed, 2**31]).standard_normal(DIM)


def shard(seed: int, rank: int, size: int = SHARD) -> Shard:
    """Rank ``rank``'s data: the same for the same (seed, rank), whatever the world size."""
    rng = np.random.default_rng([seed, rank])
    x = rng.standard_normal((size, DIM))
    y = x @ true_weights(seed) + NOISE * rng.standard_normal(size)
    return Shard(x, y)


def local_gradient(data: Shard, w: Array) -> tuple[Array, float, int]:
    """The shard's gradient *sum* of the squared error, its squared-error sum and its size:
    what an allreduce adds up (divided by the total size it is the global mean's gradient)."""
    residual = data.x @ w - data.y
    return 2.0 * (data.x.T @ residual), float(residual @ residual), len(data.y)


def step(w: Array, mean_gradient: Array, lr: float = LEARNING_RATE) -> Array:
    return w - lr * mean_gradient


def initial_weights() -> Array:
    return np.zeros(DIM)
