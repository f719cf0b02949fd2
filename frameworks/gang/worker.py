"""The default gang worker: ``python -m corral.frameworks.gang.worker``, one per rank.

Its environment is the gang's contract (docs/frameworks.md, "Gang trainer"): RANK,
WORLD_SIZE, MASTER_ADDR, MASTER_PORT, GANG_CHECKPOINT_DIR, GANG_STEPS, and optionally
GANG_CHECKPOINT_EVERY, GANG_SEED, GANG_STEP_SECONDS, GANG_PEER_TIMEOUT.

Rank 0 resumes from the checkpoint in GANG_CHECKPOINT_DIR (if any) and sends the step and
weights to every rank; each step every rank computes its shard's gradient, the allreduce adds
them up, and every rank takes the same step. Rank 0 writes a checkpoint every
GANG_CHECKPOINT_EVERY steps and, at the end, ``result.json`` (final loss, steps, the step it
resumed from), also printed as one JSON line. A lost peer ends the worker with exit 1 and one
line on stderr.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from corral.frameworks.gang import checkpoint, train
from corral.frameworks.gang.comm import Group, PeerLost


@dataclass(frozen=True)
class Config:
    rank: int
    world: int
    master_addr: str
    master_port: int
    checkpoint_dir: Path
    steps: int
    checkpoint_every: int = 50
    seed: int = 0
    step_seconds: float = 0.0
    peer_timeout: float = 30.0

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Config:
        """``ValueError`` naming the variable that is missing or bad."""

        def get(name: str, default: str | None = None) -> str:
            value = env.get(name, default)
            if value is None:
                raise ValueError(f"{name} is not set")
            return value

        def number(name: str, kind: type[int] | type[float], default: str | None = None) -> float:
            text = get(name, default)
            try:
                return kind(text)
            except ValueError:
                raise ValueError(f"{name}={text!r} is not a {kind.__name__}") from None

        cfg = cls(
            rank=int(number("RANK", int)),
            world=int(number("WORLD_SIZE", int)),
            master_addr=get("MASTER_ADDR", "127.0.0.1"),
            master_port=int(number("MASTER_PORT", int, "0")),
            checkpoint_dir=Path(get("GANG_CHECKPOINT_DIR")),
            steps=int(number("GANG_STEPS", int)),
            checkpoint_every=int(number("GANG_CHECKPOINT_EVERY", int, "50")),
            seed=int(number("GANG_SEED", int, "0")),
            step_seconds=float(number("GANG_STEP_SECONDS", float, "0")),
            peer_timeout=float(number("GANG_PEER_TIMEOUT", float, "30")),
        )
        if cfg.world < 1 or not 0 <= cfg.rank < cfg.world:
            raise ValueError(f"RANK={cfg.rank} is not in 0..WORLD_SIZE-1 (WORLD_SIZE={cfg.world})")
        if cfg.world > 1 and not 0 < cfg.master_port < 65536:
            raise ValueError(f"MASTER_PORT={cfg.master_port} is not a port")
        if cfg.steps < 0 or cfg.checkpoint_every < 1:
            raise ValueError("GANG_STEPS must be >= 0 and GANG_CHECKPOINT_EVERY >= 1")
        if cfg.step_seconds < 0 or cfg.peer_timeout <= 0:
            raise ValueError("GANG_STEP_SECONDS must be >= 0 and GANG_PEER_TIMEOUT > 0")
        return cfg


def run(cfg: Config) -> dict[str, float | int] | None:
    """Train; rank 0 returns the result (also written to result.json), the others None."""
    data = train.shard(cfg.seed, cfg.rank)
    initial: np.ndarray | None = None
    if cfg.rank == 0:
        cfg.checkpoint_dir.mkdir(parents=True, exist_ok=True)
        saved = checkpoint.load(cfg.checkpoint_dir)
        start, weights, loss = saved or (0, train.initial_weights().tolist(), float("nan"))
        initial = np.array([start, loss, *weights], dtype=np.float64)
    group = Group.connect(cfg.rank, cfg.world, cfg.master_addr, cfg.master_port, cfg.peer_timeout)
    try:
        state = group.broadcast(initial)
        start, loss, w = int(state[0]), float(state[1]), state[2:]
        for done in range(start + 1, cfg.steps + 1):
            began = time.monotonic()
            grad, sse, n = train.local_gradient(data, w)
            total = group.allreduce_sum(np.concatenate([grad, [sse, n]]))
            count = total[-1]
            loss = float(total[-2] / count)  # of the weights this step started from
            w = train.step(w, total[:-2] / count)
            if cfg.rank == 0 and (done % cfg.checkpoint_every == 0 or done == cfg.steps):
                checkpoint.save(cfg.checkpoint_dir, done, w.tolist(), loss)
            if cfg.step_seconds:
                # Models a step's compute time (tests need a run long enough to interrupt).
                time.sleep(max(0.0, cfg.step_seconds - (time.monotonic() - began)))
    finally:
        group.close()
    if cfg.rank != 0:
        return None
    result: dict[str, float | int] = {
        "final_loss": loss,
        "steps": cfg.steps,
        "resumed_from_step": start,
        "world_size": cfg.world,
    }
    checkpoint.write_json(cfg.checkpoint_dir / checkpoint.RESULT, dict(result))
    return result


def main(env: Mapping[str, str] = os.environ) -> int:
    try:
        cfg = Config.from_env(env)
    except ValueError as err:
        print(f"gang worker: bad environment: {err}", file=sys.stderr)
        return 2
    try:
        result = run(cfg)
    except PeerLost as err:
        print(f"gang worker rank {cfg.rank}: {err}", file=sys.stderr)
        return 1
    if result is not None:
        print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
