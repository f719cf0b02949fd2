"""Read `corral get agents|tasks|frameworks -o json` on stdin and print one line per entry.

Used by compose_smoke.sh so the shell script needs neither jq nor knowledge of the JSON shape.
It accepts a top-level list or an object holding the list under the kind's name, nested `info` /
`status` objects, and camelCase or snake_case keys; enum names lose their TASK_STATE_ / AGENT_
prefixes. Output (tab separated):
  agents      ID  ACTIVE|INACTIVE  ZONE
  tasks       TASK_ID  AGENT_ID  FRAMEWORK_ID  STATE
  frameworks  ID  NAME  CONNECTED|DISCONNECTED
and, for masters' `GET /health` (an object: each master's name to its /health, or null when it
did not answer):
  health      NAME  ROLE  LEADER  EPOCH   (role: leader, standby, taking-over, deposed; down
                                          when it did not answer; "-" for what a master without
                                          --zk does not say)
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def snake(key: str) -> str:
    return _CAMEL.sub("_", key).lower()


def flatten(entry: dict[str, Any]) -> dict[str, Any]:
    """Merge nested info/status objects into one snake_case dict (outer keys win)."""
    out: dict[str, Any] = {}
    for key in ("info", "status"):
        inner = entry.get(key)
        if isinstance(inner, dict):
            out.update(flatten(inner))
    for key, value in entry.items():
        if key not in ("info", "status") or not isinstance(value, dict):
            out[snake(key)] = value
    return out


def entries(doc: Any, kind: str) -> list[dict[str, Any]]:
    if isinstance(doc, dict):
        doc = doc.get(kind, doc.get(kind.rstrip("s"), []))
    if not isinstance(doc, list):
        raise SystemExit(f"compose_query: expected a list of {kind}, got {type(doc).__name__}")
    return [flatten(e) for e in doc if isinstance(e, dict)]


def enum(value: Any, *prefixes: str) -> str:
    text = str(value or "").upper()
    for prefix in prefixes:
        text = text.removeprefix(prefix)
    return text


def agent_line(a: dict[str, Any]) -> str:
    agent_id = a.get("id") or a.get("agent_id") or ""
    if "active" in a:
        active = bool(a["active"])
    else:
        active = enum(a.get("state"), "AGENT_STATE_", "AGENT_") in ("ACTIVE", "REGISTERED")
    attrs = a.get("attributes") or {}
    zone = attrs.get("zone", "") if isinstance(attrs, dict) else ""
    return f"{agent_id}\t{'ACTIVE' if active else 'INACTIVE'}\t{zone}"


def task_line(t: dict[str, Any]) -> str:
    task_id = t.get("task_id") or t.get("id") or ""
    state = enum(t.get("state"), "TASK_STATE_", "TASK_")
    return f"{task_id}\t{t.get('agent_id', '')}\t{t.get('framework_id', '')}\t{state}"


def framework_line(f: dict[str, Any]) -> str:
    fid = f.get("id") or f.get("framework_id") or ""
    connected = f.get("connected")
    if connected is None:
        connected = enum(f.get("state"), "FRAMEWORK_STATE_") in ("SUBSCRIBED", "CONNECTED")
    return f"{fid}\t{f.get('name', '')}\t{'CONNECTED' if connected else 'DISCONNECTED'}"


def health_line(name: str, h: dict[str, Any] | None) -> str:
    if h is None:
        return f"{name}\tdown\t-\t-"
    return f"{name}\t{h.get('role') or '-'}\t{h.get('leader') or '-'}\t{h.get('epoch', '-')}"


LINES = {"agents": agent_line, "tasks": task_line, "frameworks": framework_line}


def main(argv: list[str]) -> int:
    if len(argv) != 2 or (argv[1] not in LINES and argv[1] != "health"):
        print(f"usage: {argv[0]} agents|tasks|frameworks|health < json", file=sys.stderr)
        return 2
    kind = argv[1]
    try:
        doc = json.load(sys.stdin)
    except json.JSONDecodeError as exc:
        print(f"compose_query: not JSON: {exc}", file=sys.stderr)
        return 1
    if kind == "health":
        if not isinstance(doc, dict):
            print(f"compose_query: expected an object, got {type(doc).__name__}", file=sys.stderr)
            return 1
        for name, health in sorted(doc.items()):
            print(health_line(name, health if isinstance(health, dict) else None))
        return 0
    for entry in entries(doc, kind):
        print(LINES[kind](entry))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
