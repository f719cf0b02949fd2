"""The master's registry: what survives the master (``corral.master.core.durable``), stored.

One small interface (``Registry``) and its stores: ``MemoryRegistry`` (nothing survives the
process: tests, and a master started without ``--work-dir``) and ``SqliteRegistry`` (a file
under the work dir). A replicated store for several masters goes behind the same interface.
"""

from corral.master.registry.interface import Registry, RegistryError
from corral.master.registry.memory import MemoryRegistry
from corral.master.registry.sqlite import SqliteRegistry, open_registry

__all__ = ["MemoryRegistry", "Registry", "RegistryError", "SqliteRegistry", "open_registry"]
