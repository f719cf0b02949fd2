"""What a gang training run is: the workers' shape and count, the training's length, where its
checkpoints go and how often it may restart. Checked when built (``ValueError``: exit 2)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from corral.frameworks.placement_args import docker_agents
from corral.frameworks.sdk.placement import Constraint, Toleration


@dataclass(frozen=True)
class TrainSpec:
    workers: int
    steps: int
    checkpoint_dir: str
    gpus: float = 0.0  # per worker
    cpus: float = 1.0
    mem: float = 256.0
    max_restarts: int = 3
    checkpoint_every: int = 50
    priority_class: str = ""
    command: str = ""  # empty: the default numpy worker (python -m corral.frameworks.gang.worker)
    name: str = "train"
    seed: int = 0
    step_seconds: float = 0.0  # the default worker's minimum time per step
    peer_timeout: float = 30.0  # how long a worker waits for a peer before giving up
    # Where its workers may go: taints they tolerate (a GPU pool's), attributes their agents
    # must have. The framework's and its gang demand's (framework_info.py).
    tolerations: tuple[Toleration, ...] = ()
    constraints: tuple[Constraint, ...] = ()
    # The Docker image its workers run in ("": processes); it needs corral (the default worker
    # is python -m corral.frameworks.gang.worker) unless --command says otherwise. The gang
    # then places only on agents that run images.
    image: str = ""

    def __post_init__(self) -> None:
        if self.image:
            if any(ch.isspace() for ch in self.image):
                raise ValueError(f"image must name an image, got {self.image!r}")
            docker = docker_agents()
            if docker not in self.constraints:
                object.__setattr__(self, "constraints", (*self.constraints, docker))
        for name in ("workers", "steps", "max_restarts", "checkpoint_every", "seed"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{name} must be a whole number, got {value!r}")
        if self.workers < 1:
            raise ValueError(f"workers must be at least 1, got {self.workers}")
        if self.steps < 0 or self.max_restarts < 0 or self.checkpoint_every < 1:
            raise ValueError("steps and max_restarts must be >= 0, checkpoint_every >= 1")
        for name in ("gpus", "cpus", "mem", "step_seconds"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not 0 <= value < math.inf:
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        if self.cpus <= 0 and self.mem <= 0:
            raise ValueError("a worker needs some cpus or mem")
        if not self.peer_timeout > 0:
            raise ValueError(f"peer_timeout must be > 0, got {self.peer_timeout!r}")
        if not self.checkpoint_dir:
            raise ValueError("a gang needs a checkpoint directory every worker can reach")
        if not self.name:
            raise ValueError("a gang needs a name")
