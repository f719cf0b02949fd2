"""The gang trainer's decisions, pure (no SDK calls, no clock): each member's environment,
where rank 0 goes and which port it listens on, and what a member's end means for the gang.

Rules of a run (``Run``):
1. An *attempt* is one gang: a gang demand ``DEMAND-<attempt>`` with ``min_member`` = workers,
   accepted as one bundle, launched together. No member is ever launched alone.
2. Every member FINISHED: the run succeeded.
3. A member ending any other way (FAILED, KILLED, LOST, ERROR, ...) fails the attempt: the
   survivors are killed and, once every member has ended, the next attempt is launched (it
   resumes from the last checkpoint), unless ``max_restarts`` attempts were relaunched already:
   then the run failed. An attempt the cluster ended (its first member to end was preempted,
   evicted, drained away: ``sdk.is_disruption``) is relaunched without spending a restart.
4. Ends of members of an earlier attempt, or seen twice, change nothing.
"""

from __future__ import annotations

import enum
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from corral.frameworks import sdk
from corral.frameworks.gang.spec import TrainSpec
from corral.frameworks.run_ids import with_run

WORKER_MODULE = "corral.frameworks.gang.worker"


def worker_command(spec: TrainSpec) -> str | list[str]:
    """What each member runs: the user's command (sh -c), or the default numpy worker with
    this interpreter (agents on this machine run the same Python the framework runs)."""
    return spec.command or [sys.executable, "-m", WORKER_MODULE]


def member_env(
    spec: TrainSpec, rank: int, master_addr: str, master_port: int, attempt: int
) -> dict[str, str]:
    """The environment contract of a member (docs/frameworks.md, "Gang trainer")."""
    return {
        "RANK": str(rank),
        "WORLD_SIZE": str(spec.workers),
        "MASTER_ADDR": master_addr,
        "MASTER_PORT": str(master_port),
        "GANG_CHECKPOINT_DIR": spec.checkpoint_dir,
        "GANG_STEPS": str(spec.steps),
        "GANG_CHECKPOINT_EVERY": str(spec.checkpoint_every),
        "GANG_SEED": str(spec.seed),
        "GANG_STEP_SECONDS": repr(float(spec.step_seconds)),
        "GANG_PEER_TIMEOUT": repr(float(spec.peer_timeout)),
        "GANG_ATTEMPT": str(attempt),
    }


def rank0_offer(bundle: Sequence[sdk.Offer]) -> tuple[int, int] | None:
    """(index of the offer rank 0 goes on, the port it listens on): the first offer with a
    port, and its lowest port. None when no offer of the bundle has one."""
    for i, offer in enumerate(bundle):
        ranges = sorted((r.begin, r.end) for r in offer.resources.ports if r.begin <= r.end)
        if ranges:
            return i, ranges[0][0]
    return None


def members(
    spec: TrainSpec, bundle: Sequence[sdk.Offer], attempt: int, run: str = ""
) -> list[sdk.TaskInfo]:
    """One task per rank for this bundle, each naming its agent (``sdk.place_gang``), rank 0
    on an offer with a port it holds as MASTER_PORT. ``ValueError`` if the bundle has no port
    or the members do not fit it. ``run`` ends each task id (run_ids.py)."""
    found = rank0_offer(bundle)
    if found is None:
        raise ValueError(
            "no offer of the gang carries a port for rank 0's MASTER_PORT "
            "(give the agents a ports resource)"
        )
    first, port = found
    ordered = [bundle[first], *(o for i, o in enumerate(bundle) if i != first)]
    command = worker_command(spec)
    demand = demand_name(spec, attempt)
    tasks = [
        sdk.task(
            f"{spec.name}-rank{rank}",
            command,
            cpus=spec.cpus,
            mem=spec.mem,
            gpus=spec.gpus,
            task_id=with_run(f"{spec.name}-a{attempt}-rank{rank}", run),
            env=member_env(spec, rank, ordered[0].hostname, port, attempt),
            ports=[(port, port)] if rank == 0 else (),
            priority_class=spec.priority_class,
            demand=demand,
            container=container(spec),
        )
        for rank in range(spec.workers)
    ]
    return sdk.place_gang(ordered, tasks)


def container(spec: TrainSpec) -> sdk.ContainerInfo | None:
    """The workers' image, with the checkpoint directory mounted read-write at its own path
    (every rank reads and writes it there); None: they run as processes."""
    if not spec.image:
        return None
    path = os.path.abspath(spec.checkpoint_dir)
    return sdk.docker(spec.image, volumes=[(path, path, "rw")])


def demand_name(spec: TrainSpec, attempt: int) -> str:
    return f"{spec.name}-{attempt}"


def demand(spec: TrainSpec, attempt: int) -> sdk.Demand:
    """Rule 1: the whole gang or nothing."""
    return sdk.Demand(
        demand_name(spec, attempt),
        spec.workers,
        cpus=spec.cpus,
        mem=spec.mem,
        gpus=spec.gpus,
        priority_class=spec.priority_class,
        min_member=spec.workers,
        constraints=spec.constraints,
        tolerations=spec.tolerations,
    )


class Phase(enum.Enum):
    WAITING = "waiting"  # the attempt's demand is set; no bundle accepted yet
    RUNNING = "running"  # its members are launched
    STOPPING = "stopping"  # a member failed: the survivors are being killed
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class Action(enum.Enum):
    NOTHING = "nothing"
    KILL_SURVIVORS = "kill survivors"  # then wait for their ends
    RELAUNCH = "relaunch"  # every member has ended: set the next attempt's demand
    SUCCEEDED = "succeeded"
    GIVE_UP = "give up"


@dataclass
class Run:
    """Rules 1-4 as a state machine: ``launched`` and ``ended`` in, an ``Action`` out."""

    workers: int
    max_restarts: int
    attempt: int = 0
    restarts: int = 0
    phase: Phase = Phase.WAITING
    live: dict[str, str] = field(default_factory=dict)  # task id -> agent id, this attempt
    failures: list[str] = field(default_factory=list)  # why each failed attempt failed
    disruptions: int = 0  # attempts the cluster ended: relaunched, no restart spent
    # The last failed attempt's first end was a disruption (so its relaunch spent no restart).
    disrupted_last: bool = False

    @property
    def done(self) -> bool:
        return self.phase in (Phase.SUCCEEDED, Phase.FAILED)

    def launched(self, placed: dict[str, str]) -> None:
        if self.phase is not Phase.WAITING:
            raise RuntimeError(f"launching a gang while {self.phase.value}")
        if len(placed) != self.workers:
            raise ValueError(f"a gang is {self.workers} members, not {len(placed)}")
        self.live = dict(placed)
        self.phase = Phase.RUNNING

    def ended(
        self, task_id: str, succeeded: bool, why: str = "", disrupted: bool = False
    ) -> Action:
        """Member ``task_id`` ended; ``disrupted``: by the cluster, not by itself."""
        if task_id not in self.live:
            return Action.NOTHING  # rule 4
        del self.live[task_id]
        if self.phase is Phase.RUNNING:
            if succeeded:
                if self.live:
                    return Action.NOTHING
                self.phase = Phase.SUCCEEDED
                return Action.SUCCEEDED
            self.failures.append(f"{task_id} {why}".strip())
            self.phase = Phase.STOPPING
            # The first end decides: the survivors then fail for want of their peer.
            self.disrupted_last = disrupted
            if self.live:
                return Action.KILL_SURVIVORS
        if self.phase is Phase.STOPPING and not self.live:
            return self._next_attempt()
        return Action.NOTHING

    def saved(self, launching: dict[str, str] | None = None) -> dict[str, object]:
        """The run as JSON for the job service's store; ``launching``: members about to be
        launched (saved as live and running before the master hears of them)."""
        return {
            "workers": self.workers,
            "max_restarts": self.max_restarts,
            "attempt": self.attempt,
            "restarts": self.restarts,
            "phase": self.phase.value if launching is None else Phase.RUNNING.value,
            "live": dict(self.live if launching is None else launching),
            "failures": list(self.failures),
            "disruptions": self.disruptions,
            "disrupted_last": self.disrupted_last,
        }

    @classmethod
    def restore(cls, saved: dict[str, Any]) -> Run:
        run = cls(saved["workers"], saved["max_restarts"])
        run.attempt, run.restarts = saved["attempt"], saved["restarts"]
        run.phase = Phase(saved["phase"])
        run.live = dict(saved["live"])
        run.failures = list(saved["failures"])
        run.disruptions, run.disrupted_last = saved["disruptions"], saved["disrupted_last"]
        return run

    def disrupted_all(self) -> None:
        """Every live member was ended by the cluster (the job service preempted or suspended
        the gang and tore its framework down): the next attempt, no restart spent."""
        if self.done:
            return
        self.live.clear()
        if self.phase in (Phase.RUNNING, Phase.STOPPING):
            self.disruptions += 1
            self.attempt += 1
        self.phase = Phase.WAITING

    def _next_attempt(self) -> Action:
        if self.disrupted_last:
            self.disruptions += 1
        elif self.restarts >= self.max_restarts:
            self.phase = Phase.FAILED
            return Action.GIVE_UP
        else:
            self.restarts += 1
        self.attempt += 1
        self.phase = Phase.WAITING
        return Action.RELAUNCH
