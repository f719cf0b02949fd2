"""``corral bench launches``: the master's CPU per launched task, without the network.

A ``MasterCore`` with N agents (``cpus:24;mem:4096;disk:4096``) and M frameworks, launch
pacing off. Each round is a task's whole life on the master, for every agent at once:

- ``offer``: one allocation tick, its OFFERS encoded and serialized;
- ``accept``: each framework accepts each offer with as many 1-cpu, 128 MiB tasks as fit (24),
  as the load test's framework does; the master parses and decodes the ACCEPT (``CallEvents``,
  as its servicer does), handles it, and serializes the LAUNCH_TASKS;
- ``running``: each agent reports RUNNING of its tasks in one STATUS_UPDATES (a simulated
  agent's RUNNING takes its STARTING's place in the message, agent/connection.py); parsed,
  decoded, handled, the UPDATEs serialized;
- ``ack``: each framework acknowledges the UPDATEs it was sent; parsed, decoded, handled, the
  agents' acknowledgements serialized;
- ``finish`` and ``ack_finish``: the same for FINISHED.

Each step is timed with the clock passed in (process time from the CLI) and reported per task,
the median over rounds. The frameworks' and agents' own work (building their messages) is not
timed: it is another process's. gRPC and asyncio costs are not in it either; it is the part of
``corral loadtest`` (launch mode) that Corral's own code decides.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from corral.master.bench.offers import build, stream_id
from corral.master.bench.step_costs import StepCosts
from corral.master.core import events as ev
from corral.master.core.config import MasterConfig
from corral.master.core.master import MasterCore
from corral.master.outbox import Outbox
from corral.master.wire import convert
from corral.master.wire.call_events import CallEvents
from corral.master.wire.encoded import serialized
from corral.master.wire.offers import OfferEncoder
from corral.resources import EPSILON
from corral.v1 import agent_pb2, scheduler_pb2
from corral.v1 import common_pb2 as pb

STEPS = ("offer", "accept", "running", "ack", "finish", "ack_finish")
TASK_CPUS, TASK_MEM = 1.0, 128.0


class _Stamps:
    """The time and stimulus ids the bench's events carry (the runtime's, in the master)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.clock: Callable[[], float] = lambda: self.now

    def stimulus(self, kind: str) -> str:
        return kind


class _Round:
    """One round's messages as the peers would send them, and the master's side of each."""

    def __init__(self, core: MasterCore, encoder: OfferEncoder, rng: random.Random) -> None:
        self.core, self.encoder, self.rng = core, encoder, rng
        self.stamps = _Stamps()
        self.calls = CallEvents(self.stamps)  # decoded as the servicer decodes them
        self.launched: dict[str, list[pb.TaskInfo]] = {}  # agent id -> tasks it was sent
        self.tasks = 0

    def _outbox(self, commands: list[Any]) -> Outbox:
        outbox = Outbox(self.encoder)
        outbox.add(commands)
        return outbox

    def _agents_read(self, outbox: Outbox) -> list[bytes]:
        return [m.SerializeToString() for msgs in outbox.agent_msgs.values() for m in msgs]

    def _frameworks_read(self, outbox: Outbox) -> dict[str, list[bytes]]:
        return {
            fid: [serialized(w) for m in msgs for w, _ in outbox.wire(m)]
            for fid, msgs in outbox.framework_msgs.items()
        }

    # -- the master's side, timed ------------------------------------------------------------

    def offer(self, now: float, seed: int) -> dict[str, list[bytes]]:
        commands = self.core.handle(ev.AllocationTick(stimulus_id="t", now=now, seed=seed))
        return self._frameworks_read(self._outbox(commands))

    def accept(self, now: float, requests: list[bytes]) -> list[bytes]:
        self.stamps.now = now
        commands: list[Any] = []
        for raw in requests:
            request = scheduler_pb2.AcceptRequest.FromString(raw)
            commands += self.core.handle(self.calls.accept(request))
        return self._agents_read(self._outbox(commands))

    def statuses(self, now: float, messages: dict[str, bytes]) -> dict[str, list[bytes]]:
        commands: list[Any] = []
        for agent_id, raw in messages.items():
            msg = agent_pb2.AgentMessage.FromString(raw)
            msg.DiscardUnknownFields()
            statuses = convert.agent_statuses(msg.status_updates, _never)
            commands += self.core.handle(
                ev.AgentStatusUpdates(
                    stimulus_id="s",
                    now=now,
                    agent_id=agent_id,
                    connection=int(agent_id.rpartition("-")[2]),
                    statuses=statuses,
                )
            )
        return self._frameworks_read(self._outbox(commands))

    def acknowledge(self, now: float, requests: list[bytes]) -> list[bytes]:
        self.stamps.now = now
        commands: list[Any] = []
        for raw in requests:
            request = scheduler_pb2.AcknowledgeRequest.FromString(raw)
            commands += self.core.handle(self.calls.acknowledge(request))
        return self._agents_read(self._outbox(commands))

    # -- the peers' side, not timed ----------------------------------------------------------

    def accepts_for(self, received: dict[str, list[bytes]]) -> list[bytes]:
        out = []
        for fid, events in received.items():
            for raw in events:
                for offer in scheduler_pb2.Event.FromString(raw).offers.offers:
                    r = offer.resources
                    n = int(min(r.cpus / TASK_CPUS, r.mem / TASK_MEM) + EPSILON)
                    request = scheduler_pb2.AcceptRequest(
                        caller=scheduler_pb2.Caller(framework_id=fid, stream_id=stream_id(fid)),
                        offer_ids=[offer.id],
                        filters=scheduler_pb2.Filters(refuse_seconds=0.0),
                    )
                    launch = request.operations.add().launch
                    for _ in range(n):
                        self.tasks += 1
                        launch.tasks.add(
                            task_id=f"task-{self.tasks}",
                            name="load",
                            agent_id=offer.agent_id,
                            command=pb.CommandInfo(value="true", shell=True),
                            resources=pb.Resources(cpus=TASK_CPUS, mem=TASK_MEM),
                            simulation=pb.SimulationInfo(duration_seconds=1.0),
                        )
                    out.append(request.SerializeToString())
        return out

    def reports(self, launches: list[bytes], states: tuple[int, ...]) -> dict[str, bytes]:
        for raw in launches:
            sent = agent_pb2.MasterMessage.FromString(raw)
            if sent.HasField("launch_tasks"):
                for t in sent.launch_tasks.tasks:
                    self.launched.setdefault(t.agent_id, []).append(t)
        out = {}
        for agent_id, tasks in self.launched.items():
            msg = agent_pb2.AgentMessage()
            for state in states:
                for t in tasks:
                    s = msg.status_updates.statuses.add(
                        task_id=t.task_id,
                        framework_id=t.framework_id,
                        agent_id=agent_id,
                        state=state,
                        source=pb.TASK_SOURCE_EXECUTOR,
                        timestamp=1.0,
                        uuid=self.rng.randbytes(16),
                    )
                    if state == pb.TASK_STATE_FINISHED:
                        s.exit_code = 0
            out[agent_id] = msg.SerializeToString()
        return out

    def acknowledgements_for(self, received: dict[str, list[bytes]]) -> list[bytes]:
        out = []
        for fid, events in received.items():
            request = scheduler_pb2.AcknowledgeRequest(
                caller=scheduler_pb2.Caller(framework_id=fid, stream_id=stream_id(fid))
            )
            for raw in events:
                for s in scheduler_pb2.Event.FromString(raw).update.statuses:
                    request.acknowledgements.add(
                        agent_id=s.agent_id, task_id=s.task_id, uuid=s.uuid
                    )
            out.append(request.SerializeToString())
        return out

    def count_acks(self, messages: list[bytes]) -> int:
        return sum(
            len(agent_pb2.MasterMessage.FromString(m).acknowledgements.acknowledgements)
            for m in messages
        )


class _Timer:
    """Calls a function, appending the clock's time for it to ``times``."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.times: list[float] = []

    def __call__(self, fn: Callable[..., Any], *args: Any) -> Any:
        t0 = self.clock()
        result = fn(*args)
        self.times.append(self.clock() - t0)
        return result


def _never(exc: Exception) -> None:
    raise RuntimeError(f"the bench sent a status the master could not decode: {exc}")


def run(
    agents: int,
    frameworks: int,
    rounds: int,
    clock: Callable[[], float],
    allocator: str = "numba",
    warmup: int = 1,
    seed: int = 0,
) -> StepCosts:
    core = build(agents, frameworks, allocator, MasterConfig(launch_pacing=False))
    encoder, rng = OfferEncoder(), random.Random(seed)
    per_step: dict[str, list[float]] = {step: [] for step in STEPS}
    counts: list[int] = []
    now = 1.0
    for r in range(warmup + rounds):
        one = _Round(core, encoder, rng)
        timed = _Timer(clock)
        now += 1.0
        accepts = one.accepts_for(timed(one.offer, now, r))
        launches = timed(one.accept, now, accepts)
        reports = one.reports(launches, (pb.TASK_STATE_RUNNING,))
        updates = timed(one.statuses, now, reports)
        acks = timed(one.acknowledge, now, one.acknowledgements_for(updates))
        started_acks = one.count_acks(acks)
        finished = one.reports([], (pb.TASK_STATE_FINISHED,))
        now += 1.0
        updates = timed(one.statuses, now, finished)
        acks = timed(one.acknowledge, now, one.acknowledgements_for(updates))
        n = one.tasks
        launched = sum(map(len, one.launched.values()))
        live = sum(len(fw.tasks) for fw in core.frameworks.values())
        if not n or launched != n or started_acks != n or one.count_acks(acks) != n or live:
            raise RuntimeError(
                f"round {r}: {n} tasks accepted, {launched} launched, {started_acks} "
                f"RUNNING acknowledged, {live} still live"
            )
        if r < warmup:
            continue
        counts.append(n)
        for step, dt in zip(STEPS, timed.times, strict=True):
            per_step[step].append(dt / n * 1e6)
    return StepCosts.of("task", agents, frameworks, counts, per_step)
