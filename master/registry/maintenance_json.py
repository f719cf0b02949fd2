"""An agent's maintenance as the registry's stores keep it: JSON (an SQLite column of its own
table, a field of the agent's ZooKeeper record)."""

from __future__ import annotations

from typing import Any

from corral.master.core.types import CORDONED, DRAINING, Maintenance


def to_json(m: Maintenance | None) -> dict[str, Any] | None:
    if m is None:
        return None
    return {
        "mode": m.mode,
        "since": m.since,
        "requested_by": m.requested_by,
        "grace_seconds": m.grace_seconds,
    }


def from_json(d: Any) -> Maintenance | None:
    """ValueError (the store says it cannot read the registry) for a malformed record."""
    if d is None:
        return None
    if not isinstance(d, dict) or d.get("mode") not in (CORDONED, DRAINING):
        raise ValueError(f"an agent's maintenance is malformed: {d!r:.100}")
    grace = d.get("grace_seconds")
    return Maintenance(
        mode=str(d["mode"]),
        since=float(d["since"]),
        requested_by=str(d.get("requested_by", "")),
        grace_seconds=None if grace is None else float(grace),
    )
