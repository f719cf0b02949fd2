"""A gang bundle outstanding as offers (gangs.py): what the offer book keeps of it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Gang:
    """One outstanding bundle: its offers (one per agent) and how many tasks it holds."""

    gang_id: str
    framework_id: str
    demand: str
    members: int
    offer_ids: tuple[str, ...]
