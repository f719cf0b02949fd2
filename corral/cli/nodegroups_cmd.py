"""`corral get nodegroups` / `corral describe nodegroup NAME`: the autoscaler's node groups, from
its HTTP API (`corral autoscaler`, docs/autoscaler.md), as `kubectl get nodes` and the Cluster
Autoscaler's status ConfigMap show them."""

from __future__ import annotations

import argparse
import json
import time
import urllib.parse
from typing import Any

from corral.cli.app_client import Serving, service_url

DEFAULT_AUTOSCALER = "https://127.0.0.1:5092"


class Autoscaler(Serving):
    service_name = "autoscaler"
    start_command = "corral autoscaler --config FILE"
    url_hint = "--autoscaler URL or CORRAL_AUTOSCALER"


def default_url() -> str:
    return service_url("CORRAL_AUTOSCALER", DEFAULT_AUTOSCALER)


def rows(
    url: str, timeout: float, wide: bool
) -> tuple[list[str], list[list[str]], list[dict[str, Any]]]:
    groups = Autoscaler(url, timeout).call("GET", "/v1/nodegroups")["node_groups"]
    cols = ["NAME", "MIN", "MAX", "NODES", "READY", "UPCOMING", "DRAINING", "BACKOFF", "PROVIDER"]
    table = [
        [
            g["name"],
            str(g["min"]),
            str(g["max"]),
            str(g["nodes"]),
            str(g["ready"]),
            str(g["upcoming"]),
            str(g["draining"]),
            f"{g['backoff_seconds']:.0f}s" if g["backoff_seconds"] else "-",
            g["provider"],
        ]
        for g in groups
    ]
    if wide:
        cols += ["TEMPLATE", "ATTRIBUTES", "TAINTS", "PRIORITY", "PRICE"]
        for row, g in zip(table, groups, strict=True):
            t = g["template"]
            row += [
                t["resources"],
                ",".join(f"{k}={v}" for k, v in sorted(t["attributes"].items())) or "-",
                ",".join(t["taints"]) or "-",
                str(g["priority"]),
                f"{g['price']:g}",
            ]
    return cols, table, list(groups)


def describe(args: argparse.Namespace) -> int:
    """`corral describe nodegroup NAME`: the group, its nodes and its recent events."""
    url = args.autoscaler or default_url()
    name = urllib.parse.quote(args.object_id, safe="")
    g = Autoscaler(url, args.timeout).call("GET", f"/v1/nodegroups/{name}")
    if args.output == "json":
        print(json.dumps({"kind": "nodegroup", "object": g, "events": g["events"]}, indent=2))
        return 0
    t = g["template"]
    lines = [
        ("Name", g["name"]),
        ("Min/Max", f"{g['min']}/{g['max']}"),
        ("Provider", g["provider"]),
        ("Template", t["resources"]),
        ("Attributes", ", ".join(f"{k}={v}" for k, v in sorted(t["attributes"].items())) or "-"),
        ("Taints", ", ".join(t["taints"]) or "-"),
        ("Priority/Price", f"{g['priority']} / {g['price']:g}"),
        ("Nodes", f"{g['nodes']} ({g['ready']} ready, {g['upcoming']} upcoming, "
                  f"{g['draining']} draining)"),
        ("Backoff", f"{g['backoff_seconds']:.0f}s" if g["backoff_seconds"] else "-"),
    ]  # fmt: skip
    width = max(len(k) for k, _ in lines) + 2
    for key, value in lines:
        print(f"{key + ':':<{width}}{value}")
    for n in g["nodes"]:
        agent = n["agent_id"] or "-"
        print(f"  {n['name']:<16} {n['phase']:<9} agent {agent}")
    print("Events:")
    if not g["events"]:
        print("  <none>")
    now = time.time()
    for e in g["events"]:
        print(f"  {now - e['at']:>6.0f}s ago  {e['reason']:<18} {e['subject']}: {e['message']}")
    return 0
