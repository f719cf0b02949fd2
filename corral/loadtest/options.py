"""The load test's parameters, validated once so the rest can trust them."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

AGENT_RESOURCES = "cpus:24;mem:4096;disk:4096"  # Mesos' allocator benchmark agent
TASK_CPUS = 1.0
TASK_MEM = 128.0


class OptionError(ValueError):
    """A parameter out of range; the message names it."""


@dataclass(frozen=True)
class LoadTestOptions:
    agents: int = 1000
    frameworks: int = 50
    duration: float = 30.0
    warmup: float = 5.0
    mode: str = "launch"
    task_seconds: float = 1.0
    # The master's own defaults (MasterConfig; a unit test holds them equal: this layer does
    # not import the master, which it may only reach over the wire).
    allocation_interval: float = 1.0
    launch_pacing: bool = True  # False starts the master with --no-launch-pacing
    launch_latency_target: float = 0.05  # its --launch-latency-target
    master: str | None = None  # an existing master's gRPC address; None starts one
    master_http: str | None = None  # its HTTP address, for /metrics
    agent_processes: int = 0  # 0: one per AGENTS_PER_PROCESS agents
    framework_processes: int = 0  # 0: one per FRAMEWORKS_PER_PROCESS frameworks
    seed: int = 0
    # Masters started: more than one join a ZooKeeper election (one is started for them).
    masters: int = 1
    # Where the started masters keep their registry: memory, sqlite (a --work-dir) or zookeeper
    # (implied by masters > 1).
    registry: str = "memory"
    # The started masters' ZooKeeper session (seconds): how long a dead leader's znode outlives
    # it. Short, so a failover is timed in seconds; a longer one survives a loaded machine.
    zk_session_timeout: float = 2.0
    # Seconds after the frameworks start: kill -9 the leader (one SQLite master: and restart it).
    kill_leader_at: float | None = None
    # Agents whose streams are cut at once a quarter into the measured window (0: none), and
    # how long they stay away before reconnecting.
    loss_wave: int = 0
    loss_wave_away: float = 5.0
    # The drain ends when no launched task has ended for this long (0: task_seconds * 2 + 15)
    # or after DRAIN_LIMIT seconds in all; what has not ended then counts as lost.
    drain_timeout: float = 0.0
    # The started masters' security: plain text (--insecure) instead of mutual TLS, and an
    # ACL file (--acls) instead of the default grants.
    insecure: bool = False
    acls: str | None = None

    DRAIN_LIMIT = 600.0

    AGENTS_PER_PROCESS = 2500
    # More agent processes than this cost more than they spread: each has its own gRPC poller
    # thread and imports, and 20 of them on two cores took more CPU than the master they
    # loaded at 50,000 agents (docs/performance.md, "50,000 agents").
    MAX_AGENT_PROCESSES = 4
    FRAMEWORKS_PER_PROCESS = 100

    def __post_init__(self) -> None:
        if self.agents < 1:
            raise OptionError(f"--agents must be at least 1, got {self.agents}")
        if self.frameworks < 1:
            raise OptionError(f"--frameworks must be at least 1, got {self.frameworks}")
        for name in ("duration", "task_seconds", "allocation_interval", "launch_latency_target"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise OptionError(f"--{name.replace('_', '-')} must be a number > 0, got {value}")
        if not (math.isfinite(self.warmup) and self.warmup >= 0):
            raise OptionError(f"--warmup must be a number >= 0, got {self.warmup}")
        if self.mode not in ("launch", "decline"):
            raise OptionError(f"--mode must be launch or decline, got {self.mode!r}")
        if self.masters < 1:
            raise OptionError(f"--masters must be at least 1, got {self.masters}")
        if self.registry not in ("memory", "sqlite", "zookeeper"):
            raise OptionError(
                f"--registry must be memory, sqlite or zookeeper, got {self.registry!r}"
            )
        if self.masters > 1 and self.registry != "zookeeper":
            raise OptionError("--masters > 1 share their registry: it takes --registry zookeeper")
        if self.master is not None and (self.masters > 1 or self.registry != "memory"):
            raise OptionError("--masters and --registry apply to masters the load test starts")
        if not (math.isfinite(self.zk_session_timeout) and 1 <= self.zk_session_timeout <= 10):
            # The load test's ZooKeeper (tickTime 500 ms) grants sessions of 1 to 10 s.
            raise OptionError(
                f"--zk-session-timeout must be 1 to 10 s, got {self.zk_session_timeout}"
            )
        if self.kill_leader_at is not None:
            if self.masters < 2 and self.registry != "sqlite":
                raise OptionError(
                    "--kill-leader-at needs --masters 2 or more, or --registry sqlite (the one "
                    "master is started again on its registry)"
                )
            end = self.warmup + self.duration
            if not (math.isfinite(self.kill_leader_at) and 0 < self.kill_leader_at < end):
                raise OptionError(
                    f"--kill-leader-at must be within the run (0 to {end:g} s), "
                    f"got {self.kill_leader_at}"
                )
        if not 0 <= self.loss_wave <= self.agents:
            raise OptionError(
                f"--loss-wave must be between 1 and --agents ({self.agents}), got {self.loss_wave}"
            )
        if not (math.isfinite(self.loss_wave_away) and self.loss_wave_away > 0):
            raise OptionError(f"--loss-wave-away must be a number > 0, got {self.loss_wave_away}")
        if self.loss_wave and self.master is not None:
            raise OptionError("--loss-wave needs the master the load test starts (its /metrics)")
        if self.agent_processes < 0 or self.agent_processes > self.agents:
            raise OptionError(
                f"--agent-processes must be between 1 and --agents, got {self.agent_processes}"
            )
        if self.framework_processes < 0 or self.framework_processes > self.frameworks:
            raise OptionError(
                "--framework-processes must be between 1 and --frameworks, "
                f"got {self.framework_processes}"
            )

    @property
    def agent_process_count(self) -> int:
        return self.agent_processes or min(
            math.ceil(self.agents / self.AGENTS_PER_PROCESS), self.MAX_AGENT_PROCESSES
        )

    @property
    def framework_process_count(self) -> int:
        return self.framework_processes or math.ceil(self.frameworks / self.FRAMEWORKS_PER_PROCESS)

    @property
    def loss_wave_at(self) -> float:
        """Seconds after the frameworks start when the loss wave comes."""
        return self.warmup + self.duration / 4

    @property
    def drain_seconds(self) -> float:
        return self.drain_timeout or self.task_seconds * 2 + 15

    def parameters(self) -> dict[str, Any]:
        p = asdict(self)
        p["agent_processes"] = self.agent_process_count
        p["framework_processes"] = self.framework_process_count
        p["agent_resources"] = AGENT_RESOURCES
        p["task_resources"] = f"cpus:{TASK_CPUS:g};mem:{TASK_MEM:g}"
        return p


def split(total: int, parts: int) -> list[int]:
    """``total`` as ``parts`` near-equal whole numbers."""
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]
