"""``corral bench autoscaler``: one autoscaler evaluation at scale, in this process: a master core
whose agents are full (a filler framework took every offer whole), ``--demands`` pending demands
over 10 frameworks (shapes of 1-4 cpus; a tenth gangs, a tenth with a zone spread, a tenth
tolerating a taint, a tenth wanting a GPU, a fifth pinned to a zone), and ``--groups`` node
groups (5 zones x shapes, every fifth tainted, every tenth with a GPU).

One evaluation, timed whole: the autoscaler's request (policy.simulate_request) as the wire
message, the master's checks of it (what_if.request_from_pb), the master's what-if
(simulation.simulate, the query the runtime runs between two events), its answer as JSON both
ways, and the autoscaler's decision (policy.evaluate). gRPC's transport is not in it (one
message each way). Composition root: it builds a master core and the autoscaler's policy, which
no other layer may import together."""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from corral.cli.common import positive_int

ZONES = "abcde"


def register(what: Any) -> None:
    p = what.add_parser(
        "autoscaler",
        help="one autoscaler evaluation with 1,000 pending demands and 100 node groups",
    )
    p.add_argument("--demands", type=positive_int, default=1000, help="pending demands (1000)")
    p.add_argument("--groups", type=positive_int, default=100, help="node groups (100)")
    p.add_argument("--agents", type=positive_int, default=500, help="full agents (500)")
    p.add_argument("--evaluations", type=positive_int, default=5, help="measured (5)")
    p.add_argument("--json", type=Path, metavar="FILE", help="also write the figures here")
    p.set_defaults(func=run, needs_server=True)


def _cluster(agents: int, demands: int) -> Any:
    from corral.master.allocator import make_allocator
    from corral.master.core import commands as cmd
    from corral.master.core import events as ev
    from corral.master.core.config import MasterConfig
    from corral.master.core.master import MasterCore
    from corral.master.core.types import AgentSpec, Demand, FrameworkSpec, TaskSpec
    from corral.placement import AttributeConstraint, ConstraintOp, Toleration, TopologySpread
    from corral.resources import Resources, parse_resources

    core = MasterCore(MasterConfig(launch_pacing=False), make_allocator("numba"), "bench")
    for i in range(agents):
        spec = AgentSpec(
            "", f"host-{i}", parse_resources("cpus:8;mem:16384;disk:1000"),
            {"zone": ZONES[i % len(ZONES)]},
        )  # fmt: skip
        core.handle(
            ev.AgentRegister(
                stimulus_id="r", now=0.0, connection=i, spec=spec, new_agent_id=f"a{i}"
            )
        )

    def subscribe(n: int, name: str) -> str:
        out = core.handle(
            ev.FrameworkSubscribe(
                stimulus_id="s", now=0.0, connection=10**6 + n,
                spec=FrameworkSpec("", name, gpu_resources=True),
                new_framework_id=f"{name}-{n}", stream_id=f"st-{name}-{n}",
            )
        )  # fmt: skip
        return next(c.framework_id for c in out if isinstance(c, cmd.SendSubscribed))

    # The filler takes every agent whole, so every pending demand below is unschedulable.
    filler = subscribe(0, "filler")
    sent = core.handle(ev.AllocationTick(stimulus_id="t", now=1.0, seed=0))
    for c in sent:
        if not isinstance(c, cmd.SendOffers):
            continue
        for k, o in enumerate(c.offers):
            cpus, mem, disk, gpus = (float(x) for x in o.scalars[:4])
            r = Resources(cpus=cpus, mem=mem, disk=disk, gpus=gpus)
            core.handle(
                ev.Accept(
                    stimulus_id="a", now=1.0, framework_id=filler,
                    stream_id=core.frameworks[filler].stream_id, offer_ids=(o.offer_id,),
                    tasks=(TaskSpec(f"fill-{k}-{o.agent_id}", "fill", r),),
                )
            )  # fmt: skip
    per = (demands + 9) // 10
    for f in range(10):
        fid = subscribe(f + 1, f"work{f}")
        ds = []
        for k in range(min(per, demands - f * per)):
            n = f * per + k
            shape = parse_resources(f"cpus:{1 + n % 4};mem:{512 * (1 + n % 8)}")
            extra: dict[str, Any] = {}
            kind = n % 10
            if kind == 0:
                extra["min_member"] = 4
            elif kind == 1:
                extra["spread"] = TopologySpread("zone", 1)
            elif kind == 2:
                extra["tolerations"] = (Toleration("dedicated", exists=True),)
            elif kind == 3:
                shape = parse_resources(f"cpus:1;mem:512;gpus:{1 + n % 2}")
            elif kind in (4, 5):
                zone = ZONES[n % len(ZONES)]
                extra["constraints"] = (AttributeConstraint("zone", ConstraintOp.EQUALS, (zone,)),)
            ds.append(Demand(f"d{k}", shape, count=4, **extra))
        core.handle(
            ev.SetDemands(
                stimulus_id="d", now=1.0, framework_id=fid,
                stream_id=core.frameworks[fid].stream_id, demands=tuple(ds),
            )
        )  # fmt: skip
    return core


def _config(groups: int) -> Any:
    from corral.autoscaler.config import parse

    doc = []
    for g in range(groups):
        template: dict[str, Any] = {
            "resources": f"cpus:{4 * (1 + g % 4)};mem:{8192 * (1 + g % 4)}"
            + (";gpus:2" if g % 10 == 9 else ""),
            "attributes": {"zone": ZONES[g % len(ZONES)]},
        }
        if g % 5 == 4:
            template["taints"] = ["dedicated=ml:NoSchedule"]
        doc.append({"name": f"g{g}", "min": 0, "max": 20, "template": template, "price": 1 + g % 7})
    return parse({"node-groups": doc, "expander": "least-waste"})


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from corral.autoscaler.policy import Policy
    from corral.autoscaler.service import simulate_message
    from corral.master import what_if
    from corral.master.core.simulation import simulate

    console = Console()
    with console.status(f"{args.agents} agents, {args.demands} demands"):
        core = _cluster(args.agents, args.demands)
    config = _config(args.groups)
    wall: list[float] = []
    cpu: list[float] = []
    parts: dict[str, list[float]] = {"master": [], "wire": [], "policy": []}
    summary: dict[str, Any] = {}
    for i in range(args.evaluations + 1):  # the first warms up (numba, caches)
        policy = Policy(config)  # fresh: every evaluation scales up, the larger plan
        w0, c0 = time.perf_counter(), time.process_time()
        message = simulate_message(policy.simulate_request())
        asked = what_if.request_from_pb(message)
        t1 = time.perf_counter()
        answer = simulate(core, asked, 2.0 + i)
        t2 = time.perf_counter()
        decoded = json.loads(json.dumps(answer))
        t3 = time.perf_counter()
        plan = policy.evaluate(decoded, [], 2.0 + i)
        w4, c4 = time.perf_counter(), time.process_time()
        if i:
            wall.append(w4 - w0)
            cpu.append(c4 - c0)
            parts["master"].append(t2 - t1)
            parts["wire"].append((t1 - w0) + (t3 - t2))
            parts["policy"].append(w4 - t3)
        summary = {
            "unschedulable": sum(1 for p in answer["pending"] if not p["schedulable"]),
            "options": len(answer["options"]),
            "nodes_asked": len(plan.create),
            "events": len(plan.events),
        }
    figures = {
        "agents": args.agents,
        "demands": args.demands,
        "groups": args.groups,
        "evaluations": args.evaluations,
        "median_ms": round(statistics.median(wall) * 1000, 1),
        "max_ms": round(max(wall) * 1000, 1),
        "median_cpu_ms": round(statistics.median(cpu) * 1000, 1),
        "master_ms": round(statistics.median(parts["master"]) * 1000, 1),
        "wire_ms": round(statistics.median(parts["wire"]) * 1000, 1),
        "policy_ms": round(statistics.median(parts["policy"]) * 1000, 1),
        **summary,
    }
    table = Table(title=f"one autoscaler evaluation ({args.demands} demands, {args.groups} groups)")
    table.add_column("figure")
    table.add_column("value", justify="right")
    for key, value in figures.items():
        table.add_row(key, str(value))
    console.print(table)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return 0
