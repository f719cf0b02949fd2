"""Optional dependency sets: which import names each pip extra brings.

The base install (``pip install corral``) is enough to write and run a framework. Commands that
run a master, an agent, the allocator's kernel or the load test need ``corral[server]``; the
CLI checks for it here before importing them, so a missing extra is one line, not a traceback.
A test holds ``SERVER_MODULES`` to the ``server`` extra in pyproject.toml.
"""

from __future__ import annotations

import importlib.util

SERVER_EXTRA = "server"
# Import names of the distributions in the `server` extra, in pyproject.toml's order.
SERVER_MODULES: tuple[str, ...] = (
    "aiohttp",
    "numpy",
    "numba",
    "psutil",
    "prometheus_client",
    "kazoo",
    "cryptography",
    "yaml",
    "croniter",
    "dns",
    "aiodocker",
)


def missing(modules: tuple[str, ...] = SERVER_MODULES) -> list[str]:
    """The modules of ``modules`` that cannot be imported here."""
    return [name for name in modules if importlib.util.find_spec(name) is None]


def install_hint(extra: str = SERVER_EXTRA) -> str:
    return f"pip install 'corral[{extra}]'"
