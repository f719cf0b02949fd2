"""`corral explain FRAMEWORK`: why a framework got (or did not get) offers in the last cycle,
and, with an autoscaler (``--autoscaler URL`` or ``$CORRAL_AUTOSCALER``), what it intends for
each pending demand: its latest ``TriggeredScaleUp`` or ``NotTriggerScaleUp`` about it."""

from __future__ import annotations

import argparse
import json
import os
import time
import urllib.parse
from typing import Any

from corral.cli.common import add_master_arg, add_output_arg, add_timeout_arg
from corral.cli.errors import CliError
from corral.cli.operator_client import call_operator
from corral.v1 import operator_pb2


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("explain", help="why a framework got no offers in the last cycle")
    p.add_argument(
        "framework_id", metavar="FRAMEWORK", help="the framework's id (corral get frameworks)"
    )
    p.add_argument(
        "--autoscaler",
        default=None,
        metavar="URL",
        help="also say what this autoscaler intends for each pending demand (default "
        "$CORRAL_AUTOSCALER; neither: not asked)",
    )
    add_output_arg(p)
    add_timeout_arg(p)
    add_master_arg(p)
    p.set_defaults(func=run)


# What the autoscaler says about a demand that is its intent (the rest are about nodes).
INTENT = ("TriggeredScaleUp", "NotTriggerScaleUp")


def intents(
    url: str, framework_id: str, demands: list[str], timeout: float
) -> dict[str, dict[str, Any] | str]:
    """Per demand, the autoscaler's latest intent event about it (None when it said nothing),
    or one line saying why it could not be asked: an autoscaler that does not answer never
    fails the explanation."""
    from corral.cli.nodegroups_cmd import Autoscaler

    out: dict[str, dict[str, Any] | str] = {}
    for name in demands:
        subject = urllib.parse.quote(f"{framework_id}/{name}", safe="")
        try:
            got = Autoscaler(url, timeout).call("GET", f"/v1/events?subject={subject}")
        except (CliError, OSError) as err:
            why = f"the autoscaler at {url} did not answer: {err}"
            return {d: why for d in demands}
        said = [e for e in got.get("events", []) if e.get("reason") in INTENT]
        if said:
            out[name] = said[-1]
    return out


def run(args: argparse.Namespace) -> int:
    e: operator_pb2.Explanation = call_operator(
        args.master,
        "Explain",
        operator_pb2.ExplainRequest(framework_id=args.framework_id),
        args.timeout,
    )
    details = json.loads(e.details_json or "{}")
    pending = json.loads(e.pending_demands_json or "[]")
    url = args.autoscaler or os.environ.get("CORRAL_AUTOSCALER", "")
    intended = (
        intents(url, e.framework_id, [d["name"] for d in pending], args.timeout) if url else {}
    )
    if url:
        for d in pending:
            d["autoscaler"] = intended.get(d["name"])
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
        if url:
            print(f"    autoscaler: {_intent_line(d.get('autoscaler'))}")
    return 0


def _intent_line(said: dict[str, Any] | str | None) -> str:
    if said is None:
        return "nothing said about it yet"
    if isinstance(said, str):
        return said
    ago = max(0.0, time.time() - float(said.get("at", 0.0)))
    return f"{said['reason']} {ago:.0f}s ago: {said['message']}"
