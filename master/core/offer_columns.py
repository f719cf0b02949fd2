"""Offers made to one framework at once, kept as columns: one cycle's share of the plan, one
gang's bundle, or one nominated room.

Entry ``i`` is the offer ``f"{prefix}{base + i}"``: ids are a batch's base plus the entry's
index, so an offer is found from its id by arithmetic (offer_book.py), with no per-offer
record, dict entry or set entry. The columns are written once, when the offers are made, and
never changed after: only ``alive`` (and ``live``, its count) moves as offers are used or go
back. The outbox encodes a batch after the core has moved on, so it must see the offers as
they were made.

``OfferRecord`` (records.py) is an entry as an object, made on demand for whoever wants one
(an accept, the views, validate()); it names its batch and index, so the book can act on it.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from corral.master.allocator.interface import PlanSource
from corral.master.core.records import OfferRecord
from corral.master.core.types import AgentSpec
from corral.resources import PortRanges


class OfferColumns:
    __slots__ = (
        "agent_ids",
        "alive",
        "base",
        "created_at",
        "framework_id",
        "gang_id",
        "handles",
        "live",
        "ports",
        "prefix",
        "revocable",
        "rows",
        "scalars",
        "source",
        "specs",
    )

    def __init__(
        self,
        prefix: str,
        base: int,
        framework_id: str,
        agent_ids: list[str],
        specs: list[AgentSpec],
        scalars: npt.NDArray[np.float64],
        ports: dict[int, PortRanges],
        created_at: float,
        gang_id: str = "",
        source: PlanSource | None = None,
        handles: npt.NDArray[np.int64] | None = None,
        revocable: bool = False,
    ) -> None:
        if not len(agent_ids) == len(specs) == scalars.shape[0] or scalars.shape[1:] != (4,):
            raise ValueError("offer columns differ in length")
        if source is not None and (handles is None or len(handles) != len(agent_ids)):
            raise ValueError("a plan's offers need a handle each")
        self.prefix = prefix
        self.base = base  # the sequence number of entry 0
        self.framework_id = framework_id
        self.agent_ids = agent_ids
        self.specs = specs  # each agent's description as offered (hostname, attributes)
        # [n, 4]: cpus, mem, disk, gpus per entry (corral.resources.SCALARS); returned to the
        # allocator as an array, and read as lists (``scalar_rows``) by the encoder and records.
        self.scalars = scalars
        self.rows: list[list[float]] | None = None
        self.ports = ports  # entry -> the agent's free ports it carries; most carry none
        self.created_at = created_at
        self.gang_id = gang_id  # a gang's bundle (gangs.py): all its entries go together
        # Revocable resources (revocable.py): kept by that module, never by the offer book.
        self.revocable = revocable
        # Where a cycle's plan named its entries (None: made outside a cycle): they go back by
        # handle (Allocator.recover_handles), not by ids.
        self.source = source
        self.handles = handles
        self.alive = bytearray(b"\x01") * len(agent_ids)
        self.live = len(agent_ids)

    def __len__(self) -> int:
        return len(self.agent_ids)

    def offer_id(self, i: int) -> str:
        return f"{self.prefix}{self.base + i}"

    def ids(self) -> list[str]:
        prefix = self.prefix
        return [f"{prefix}{s}" for s in range(self.base, self.base + len(self.agent_ids))]

    def scalar_rows(self) -> list[list[float]]:
        rows = self.rows
        if rows is None:
            rows = self.rows = self.scalars.tolist()
        return rows

    def live_indices(self) -> list[int]:
        if self.live == len(self.alive):
            return list(range(self.live))
        return [i for i, a in enumerate(self.alive) if a]

    def record(self, i: int) -> OfferRecord:
        spec = self.specs[i]
        return OfferRecord(
            self.offer_id(i),
            self.framework_id,
            self.agent_ids[i],
            spec.hostname,
            self.scalar_rows()[i],
            self.ports.get(i, ()),
            spec.attributes,
            self.created_at,
            self.gang_id,
            self,
            i,
            self.revocable,
            spec.taints,
        )

    def records(self) -> list[OfferRecord]:
        """Every entry as made, used or not (what a SendOffers carried)."""
        return [self.record(i) for i in range(len(self.agent_ids))]
