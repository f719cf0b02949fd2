"""`corral explain FRAMEWORK`: why a framework got (or did not get) offers in the last cycle."""

from __future__ import annotations

import argparse
import json

from corral.cli.common import add_master_arg, add_output_arg, add_timeout_arg
from corral.cli.operator_client import call_operator
from corral.v1 import operator_pb2


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("explain", help="why a framework got no offers in the last cycle")
    p.add_argument(
        "framework_id", metavar="FRAMEWORK", help="the framework's id (corral get frameworks)"
    )
    add_output_arg(p)
    add_timeout_arg(p)
    add_master_arg(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    e: operator_pb2.Explanation = call_operator(
        args.master,
        "Explain",
        operator_pb2.ExplainRequest(framework_id=args.framework_id),
        args.timeout,
    )
    details = json.loads(e.details_json or "{}")
    pending = json.loads(e.pending_demands_json or "[]")
    if args.output == "json":
        # Field names as the HTTP explain's (/api/v1/frameworks/{id}/explain).
        record = {
            "framework_id": e.framework_id,
            "state": e.state,
            "suppressed": e.suppressed,
            "outstanding_offers": e.outstanding_offers,
            "offered_agents": e.offered_agents,
            "reasons": dict(e.reasons),
            "details": details,
            "priority": e.priority,
            "wants_nothing": e.wants_nothing,
            "pending_demands": pending,
        }
        print(json.dumps(record, indent=2))
        return 0
    print(f"framework {e.framework_id}: {e.state}{', suppressed' if e.suppressed else ''}")
    print(
        f"  offered {e.offered_agents} agents in the last cycle; "
        f"{e.outstanding_offers} offers outstanding"
    )
    print(
        f"  priority {e.priority}"
        + ("; wants nothing (its demands are met)" if e.wants_nothing else "")
    )
    if e.reasons:
        print("  held back by:")
        for reason, count in sorted(e.reasons.items(), key=lambda kv: -kv[1]):
            print(f"    {reason}: {count}")
    for d in pending:
        print(
            f"  demand {d['name']} ({d['priority_class']}, {d['priority']}): "
            f"{d['unmet']} of {d['count']} unmet"
            + (f", gang of at least {d['min_member']}" if d["min_member"] else "")
        )
        print(f"    {d['summary']}")
        for r in d["reasons"]:
            if r["sample_agents"]:
                print(f"    {r['reason']}: e.g. {', '.join(r['sample_agents'])}")
        room = d.get("room") or {}  # a master before issue #40 counted room as a reason
        if room.get("sample_agents"):
            print(f"    room now: e.g. {', '.join(room['sample_agents'])}")
    return 0
