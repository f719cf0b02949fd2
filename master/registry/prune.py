"""What a registry forgets: removed frameworks beyond the newest MAX_REMOVED_FRAMEWORKS.

A removed framework is kept so its id cannot subscribe again after a restart; keeping every one
would grow the registry with every `corral run` forever.
"""

from __future__ import annotations

from collections.abc import Iterable

from corral.master.core.durable import FrameworkEntry

MAX_REMOVED_FRAMEWORKS = 1000


def removed_to_forget(entries: Iterable[FrameworkEntry]) -> list[str]:
    """Ids of the removed frameworks beyond the newest MAX_REMOVED_FRAMEWORKS."""
    removed = sorted((e.removed_at, e.framework_id) for e in entries if e.removed_at is not None)
    excess = len(removed) - MAX_REMOVED_FRAMEWORKS
    return [fw_id for _, fw_id in removed[:excess]] if excess > 0 else []
