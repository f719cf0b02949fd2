"""A run's own token at the end of its task ids (batch's ``map-3.0-5be1c2``, the gang's
``train-a0-rank1-5be1c2``).

Two runs of one job at once are two frameworks. Agents key tasks by framework and id, so
their tasks never collide there, but people name tasks by id (`corral logs`, `corral kill`
without a framework): a token of its own keeps each run's ids apart for them. Drawn in the
shell (the schedulers), given as an input to the models, which stay deterministic.
"""

from __future__ import annotations

import secrets


def new_run_id() -> str:
    """Six hex digits, drawn per run."""
    return secrets.token_hex(3)


def with_run(task_id: str, run: str) -> str:
    """``task_id`` ended by ``run`` ("" leaves it as it is)."""
    return f"{task_id}-{run}" if run else task_id
