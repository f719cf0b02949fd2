"""Launch pacing: how many cpus an allocation cycle may offer, so accept->RUNNING stays near a
latency target (``MasterConfig.launch_pacing``, ``launch_latency_target``).

Frameworks accept what they are offered at once, so without a bound every free cpu is turned
into a launch whether or not the master, the agents and the frameworks can start it promptly:
the backlog grows to the whole cluster and accept->RUNNING becomes the time to work through it
(seconds in the load test). As TCP does with a congestion window, the cpus launching at once
(accepted, not yet RUNNING) are held under a window, never below ``launch_pacing_floor_cpus``;
a cycle offers what the window has left. Of the launches that started since the last cycle:

- more than SLOW_SHARE later than the target: the window halves (a burst was late);
- else more than QUEUED_SHARE later than QUEUED_DELAY of the target: the window eases by EASE.
  As TCP Vegas and BBR read a queue from a round trip that grows before any packet is lost,
  launches that take 40 % of the target are already waiting behind others: shrinking then keeps
  the tail under the target, where a window that grows until launches are late holds them at
  the target and overshoots it by the feedback's delay (p99 at ~2x the target, issue #18);
- else, if the last cycle's plan reached the window, it grows by GROWTH.

Declines grow the window too, so frameworks that decline are not held to the floor. A task
launching for longer than ``launch_pacing_window`` (a slow image pull, a lost agent) stops
counting, and so does one on an agent whose stream is down, while it is down: the window
bounds the launches the master is waiting on, and nothing the master holds back speeds one on
an agent it cannot reach. Counted, an agent lost mid-launch with more cpus launching than the
window (one large accept on one large machine) stopped offers to every framework for
``launch_pacing_window``; a partition cutting 5,000 of 10,000 agents stopped them for 5 s in
the load test (docs/performance.md, "A partition stopped every offer"). Its tasks count again
when it re-registers, as long as they are still launching and within the window, and how late
they then start is not read as a queue (the agent was away).

As TCP does, the window starts in slow start: it doubles per ``launch_latency_target`` of time
until it first halves or eases, and only then grows by GROWTH. From the 64-cpu floor a tenth per
step took ~60 cycles to reach a 10,000-agent cluster (240,000 cpus) that declines everything:
most of a decline load test's measured window spent ramping up; doubling takes ~12 (issue #18).

As TCP grows its window once per round trip and cuts it once per loss event, whatever the rate
of acknowledgements: the growth is per ``launch_latency_target`` of time (a cycle shorter than
that grows the window by that share of a step, so a 10 ms allocation interval does not grow it
five times as fast as a 50 ms one), and after a halving only launches accepted since then
count, so one late burst halves it once.

Sans-IO like the rest of the core: time comes in as ``now``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import numpy as np
import numpy.typing as npt

from corral.master.core.config import MasterConfig
from corral.master.core.records import AgentRecord, TaskRecord
from corral.master.core.types import TaskState

SLOW_SHARE = 0.01  # more late launches than this share halves the window
QUEUED_DELAY = 0.4  # a launch slower than this share of the target waited behind others ...
QUEUED_SHARE = 0.1  # ... and more than this share of such launches eases the window ...
EASE = 0.9  # ... to this share of itself
GROWTH = 0.1  # an on-time window grows by this share per latency target of time
LAUNCHING = frozenset({TaskState.STAGING, TaskState.STARTING})


class LaunchPacer:
    def __init__(self, config: MasterConfig) -> None:
        self.config = config
        self.window = config.launch_pacing_floor_cpus  # cpus that may be launching
        self.limited = False  # the last cycle's plan reached the window
        self.slow_start = True  # doubling until the first halving (see the module's doc)
        self._started = 0  # launches that reached RUNNING since the last cycle
        self._slow = 0  # ... of which later than launch_latency_target
        self._queued = 0  # ... of which later than QUEUED_DELAY of it
        self._declined = 0  # offers declined since the last cycle
        # When the window last halved: launches accepted before it were made under the old
        # window, and their lateness is not news.
        self._epoch = -math.inf
        self._at: float | None = None  # the last cycle's time
        # Tasks that were launching when last seen; ``allowance`` drops those that moved on,
        # so a tick costs the launches of one interval, not a walk over every task.
        self._launches: list[TaskRecord] = []
        # Launches seen on an agent without a stream (framework id, task id), while they are
        # still launching: how late they start says nothing of a queue (the agent was away).
        self._cut: set[tuple[str, str]] = set()

    def launching(self, task: TaskRecord) -> None:
        """A task is launching (accepted, or reported launching at re-registration)."""
        self._launches.append(task)

    def launching_many(self, tasks: Iterable[TaskRecord]) -> None:
        """``launching`` for each of an accept's tasks."""
        self._launches.extend(tasks)

    def running(self, task: TaskRecord, now: float) -> None:
        """``task`` is about to move to RUNNING at ``now``."""
        if task.state in LAUNCHING and task.launched_at >= self._epoch:
            if self._cut and (task.framework_id, task.task_id) in self._cut:
                return  # late because its agent was away, not behind other launches
            self._started += 1
            took = now - task.launched_at
            target = self.config.launch_latency_target
            if took > QUEUED_DELAY * target:
                self._queued += 1
                if took > target:
                    self._slow += 1

    def launching_per_agent(self) -> dict[str, int]:
        """Tasks launching per agent, of those launched within ``launch_pacing_window`` (for
        the metrics: costs the launches in flight, not a walk over every task)."""
        counts: dict[str, int] = {}
        for t in self._launches:
            if t.state in LAUNCHING:
                counts[t.agent_id] = counts.get(t.agent_id, 0) + 1
        return counts

    def declined(self, offers: int) -> None:
        self._declined += offers

    def allowance(self, now: float, agents: Mapping[str, AgentRecord] | None = None) -> float:
        """The cpus this allocation cycle may offer (infinite with pacing off). Always called
        once per cycle: it also forgets the launches that moved on. ``agents``: every agent by
        id when some of them have no stream (None when every agent has one, so none is looked
        up): launches on those without one do not count (see the module's doc)."""
        cfg = self.config
        still = [
            t
            for t in self._launches
            if t.state in LAUNCHING and now - t.launched_at < cfg.launch_pacing_window
        ]
        self._launches = still
        if agents is None:
            launching = sum(t.spec.resources.cpus for t in still)
        else:
            launching = 0.0
            for t in still:
                if _attached(agents.get(t.agent_id)):
                    launching += t.spec.resources.cpus
                else:
                    self._cut.add((t.framework_id, t.task_id))
        if self._cut:
            self._cut &= {(t.framework_id, t.task_id) for t in still}
        floor = cfg.launch_pacing_floor_cpus
        started, slow, queued = self._started, self._slow, self._queued
        declined = self._declined
        self._started = self._slow = self._queued = self._declined = 0
        elapsed = now - self._at if self._at is not None else math.inf
        self._at = now
        if slow > SLOW_SHARE * started:
            self.window = max(floor, self.window / 2)
            self._epoch = now
            self.slow_start = False
        elif queued > QUEUED_SHARE * started:
            # No epoch: each cycle that still reads a queue eases it again, so a standing
            # queue shrinks the window in proportion to how long it stands.
            self.window = max(floor, self.window * EASE)
            self.slow_start = False
        elif (started or declined) and self.limited:
            # On time, or declined (not launches at all), while the last plan reached the
            # window: it is in the way, so it grows. An idle window stays as it is. By a share
            # of itself, not by the floor: 64 cpus per step overshot a window of a few hundred
            # by a third within one feedback delay.
            step = self.window if self.slow_start else GROWTH * self.window
            self.window += step * min(1.0, elapsed / cfg.launch_latency_target)
        if not cfg.launch_pacing:
            return math.inf
        return self.window - launching


def _attached(agent: AgentRecord | None) -> bool:
    return agent is not None and agent.connection is not None


def allowance_cut(cpus: npt.NDArray[np.float64], allowance: float) -> tuple[int, float]:
    """How many entries, in order, an allowance of cpus takes, and what is left of it: an
    entry is taken while what is left before it is above zero (so the last one taken may
    overdraw it). The remainders are subtracted one entry at a time, as a loop would, so the
    cut is the same to the last bit; one accumulate, not a Python step per offer."""
    n = len(cpus)
    if not n or allowance <= 0:
        return 0, allowance
    left = np.subtract.accumulate(np.concatenate(([allowance], cpus)))
    spent = left <= 0
    cut = int(spent.argmax()) if spent.any() else n
    return cut, float(left[cut])
