"""The registry's interface: read everything at start, then apply changes in batches."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from corral.master.core.durable import Change, RegistryState


class RegistryError(Exception):
    """The registry cannot be read or written: the master must not go on without it."""


class Registry(Protocol):
    # Whether ``apply`` may wait on a disk or a network: the runtime then applies it in a worker
    # thread, off the event loop; one that only writes the process's memory is applied at once
    # (a thread hand-off per loop turn cost more than the write: docs/performance.md).
    blocking: bool

    def load(self) -> RegistryState:
        """Everything the registry holds (empty for a new one)."""
        ...

    def apply(self, changes: Sequence[Change]) -> None:
        """Make ``changes`` durable, in order, all or none; return only once they are.
        Raises RegistryError."""
        ...

    def describe(self) -> str:
        """Where the registry is, for logs and views (``sqlite:/var/lib/corral/registry.db``)."""
        ...

    def close(self) -> None: ...
