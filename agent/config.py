"""Everything one agent needs to run, as built by ``corral agent`` (or a test)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from corral.agent.connection import ReconnectBackoff
from corral.agent.core.pressure import Thresholds
from corral.agent.core.sandbox_gc import GcPolicy
from corral.agent.core.status_updates import Backoff
from corral.placement import Taint
from corral.resources import Resources
from corral.tls import Credentials


@dataclass(frozen=True, slots=True)
class AgentConfig:
    hostname: str
    resources: Resources
    work_dir: Path
    name: str = ""  # for people (AgentInfo.name); not part of the checked configuration
    # Measured from the host (no --resources): the checkpointed disk is kept across restarts,
    # since free disk changes all the time (see corral.agent.checkpoint.AgentConfigCheckpoint).
    resources_detected: bool = False
    master: str = "127.0.0.1:5050"
    # The agent's credential (its certificate names its principal); None: found as
    # corral.tls says (CORRAL_TLS_DIR, ~/.corral/tls), INSECURE: plain text.
    tls: Credentials | None = None
    attributes: dict[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    simulate: bool = False
    # Simulated agents keep their id in memory; real ones checkpoint it in work_dir/agent_id,
    # with their configuration and their tasks (re-attached after a restart).
    checkpoint: bool = True
    default_grace_period: float = 3.0
    status_backoff: Backoff = field(default_factory=Backoff)
    reconnect_backoff: ReconnectBackoff = field(default_factory=ReconnectBackoff)
    # How long a stopping agent waits to hand its last statuses to the stream.
    flush_timeout: float = 2.0
    # Measuring and limiting tasks (docs/operations.md, "Agent flags"): how often, how
    # (memory_control.MODES), the eviction thresholds, and the revocable estimate's safety
    # margin (None: the agent lends nothing).
    usage_interval: float = 1.0
    cgroups: str = "auto"
    thresholds: Thresholds = field(default_factory=Thresholds)
    revocable_margin: float | None = None
    # Ended tasks' sandboxes (agent/core/sandbox_gc.py): kept this long on an empty disk, less
    # as it fills to the headroom; looked at every disk_watch_interval seconds.
    sandbox_gc: GcPolicy = field(default_factory=GcPolicy)
    disk_watch_interval: float = 60.0
    # What runs its tasks (corral.containers): "process", and "docker" for tasks in images,
    # through the engine at docker_host (None: the client's default, DOCKER_HOST or the
    # local socket). Advertised as the attribute `containerizers`.
    containerizers: tuple[str, ...] = ("process",)
    docker_host: str | None = None
    # The GPU devices it hands out, one per whole gpu a task asks for (agent/gpu_devices.py);
    # its gpus resource is their number. Empty: GPUs are only counted.
    gpu_devices: tuple[str, ...] = ()

    @property
    def allocatable(self) -> Resources:
        """What the agent offers: its resources less the hard eviction threshold's memory
        (kubelet's allocatable: capacity less the hard eviction threshold). Memory placed by
        requests then never takes the agent below the threshold, so tasks that use what they
        request are not evicted; pressure is still measured against the whole ``mem``."""
        hard = self.thresholds.hard
        if hard is None:
            return self.resources
        return replace(self.resources, mem=max(0.0, self.resources.mem - hard))
