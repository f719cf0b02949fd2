"""``corral bench offers``: the master's CPU per offer in the decline loop, without the network.

A ``MasterCore`` with N agents (``cpus:24;mem:4096;disk:4096``) and M frameworks; each round is
one allocation tick, the outbox encoding its OFFERS, the wire round trip of those messages
(serialize, parse), and one DECLINE per framework (``refuse_seconds: 0``) for every offer it
got. Each step is timed with the clock passed in (process time from the CLI, so other processes
on the machine do not count) and reported per offer. It is the per-offer part of
``corral loadtest --mode decline``; gRPC and asyncio costs are not in it.
"""

from __future__ import annotations

from collections.abc import Callable

from corral.master.allocator import make_allocator
from corral.master.bench.step_costs import StepCosts
from corral.master.core import commands as cmd
from corral.master.core import events as ev
from corral.master.core.config import MasterConfig
from corral.master.core.master import MasterCore
from corral.master.core.types import AgentSpec, FrameworkSpec
from corral.master.outbox import Outbox
from corral.master.wire.encoded import serialized
from corral.master.wire.offers import OfferEncoder
from corral.resources import parse_resources
from corral.v1 import scheduler_pb2

AGENT = "cpus:24;mem:4096;disk:4096"
STEPS = ("tick", "encode", "wire", "decline")


def stream_id(framework_id: str) -> str:
    """The stream id ``build`` subscribed framework ``framework-N`` with."""
    return f"stream-{framework_id.rpartition('-')[2]}"


def build(
    agents: int, frameworks: int, allocator: str, config: MasterConfig | None = None
) -> MasterCore:
    # Pacing off: every agent is offered each round, so the cost is per offer of a whole cycle.
    config = config or MasterConfig(launch_pacing=False)
    core = MasterCore(config, make_allocator(allocator), "bench")
    resources = parse_resources(AGENT)
    for i in range(agents):
        spec = AgentSpec(agent_id="", hostname=f"host-{i}", resources=resources)
        core.handle(
            ev.AgentRegister(
                stimulus_id="r", now=0.0, connection=i, spec=spec, new_agent_id=f"agent-{i}"
            )
        )
    for i in range(frameworks):
        core.handle(
            ev.FrameworkSubscribe(
                stimulus_id="s",
                now=0.0,
                connection=agents + i,
                spec=FrameworkSpec(framework_id="", name=f"bench-{i}"),
                new_framework_id=f"framework-{i}",
                stream_id=f"stream-{i}",
            )
        )
    return core


def run(
    agents: int,
    frameworks: int,
    rounds: int,
    clock: Callable[[], float],
    allocator: str = "numba",
    warmup: int = 2,
) -> StepCosts:
    core = build(agents, frameworks, allocator)
    now = 1.0
    per_step: dict[str, list[float]] = {step: [] for step in STEPS}
    offers: list[int] = []
    encoder = OfferEncoder()  # kept across rounds, as the master keeps it across cycles
    for r in range(warmup + rounds):
        now += 0.1
        t0 = clock()
        commands = core.handle(ev.AllocationTick(stimulus_id="t", now=now, seed=r))
        t1 = clock()
        outbox = Outbox(encoder)
        outbox.add(commands)
        sent_msgs = {
            fid: [w for m in msgs for w, _ in outbox.wire(m)]
            for fid, msgs in outbox.framework_msgs.items()
        }
        t2 = clock()
        received = {
            fid: [scheduler_pb2.Event.FromString(serialized(m)) for m in msgs]
            for fid, msgs in sent_msgs.items()
        }
        t3 = clock()
        n = 0
        for fid, events in received.items():
            for event in events:
                ids = tuple(o.id for o in event.offers.offers)
                n += len(ids)
                core.handle(
                    ev.Decline(
                        stimulus_id="d",
                        now=now,
                        framework_id=fid,
                        stream_id=stream_id(fid),
                        offer_ids=ids,
                        refuse_seconds=0.0,
                    )
                )
        t4 = clock()
        sent = sum(len(b) for c in commands if isinstance(c, cmd.SendOffers) for b in c.batches)
        if n != sent:
            raise RuntimeError(f"round {r}: {sent} offers sent, {n} declined")
        if r < warmup or not n:
            continue
        offers.append(n)
        for step, dt in zip(STEPS, (t1 - t0, t2 - t1, t3 - t2, t4 - t3), strict=True):
            per_step[step].append(dt / n * 1e6)
    return StepCosts.of("offer", agents, frameworks, offers, per_step)
