"""Which frameworks ``corral run NAME`` can run, found without a central list.

A framework is a package. It is found in two ways:

- **In this repository:** a package under ``corral.frameworks`` with a ``cli`` module that
  defines ``FRAMEWORKS``, a list of :class:`FrameworkCommand`. Adding the directory is adding
  the framework; nothing has to be reinstalled (an editable install sees it at once).
- **Elsewhere:** an installed distribution that declares an entry point in the group
  ``corral.frameworks`` naming a ``FrameworkCommand`` (or a list of them)::

      [project.entry-points."corral.frameworks"]
      mine = "my_package.cli:FRAMEWORK"

Every ``corral`` invocation builds its parser, so a ``cli`` module must stay light: argparse
only at the top, the SDK and the framework itself imported inside ``run``.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import importlib.util
import pkgutil
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass

ENTRY_POINT_GROUP = "corral.frameworks"
_PACKAGE = "corral.frameworks"
_NOT_FRAMEWORKS = frozenset({"sdk"})  # the SDK is a library, not something to run


@dataclass(frozen=True)
class FrameworkCommand:
    """One ``corral run NAME``.

    ``configure`` adds the framework's own arguments to its parser (``corral run`` has already
    added ``--master``, ``--role`` and ``--connect-timeout``); ``run`` runs it with the parsed
    arguments and returns the exit code. SDK errors escaping ``run`` become one-line messages
    (exit 1): ``ConnectError``, ``CallError``, ``FrameworkError``; a ``ValueError`` is a
    usage error (exit 2), for configuration the parser cannot check (a bad job file)."""

    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    description: str = ""
    origin: str = ""  # filled by discovery: the module or entry point it came from


def _in_tree() -> Iterable[tuple[str, object]]:
    package = importlib.import_module(_PACKAGE)
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if not info.ispkg or info.name in _NOT_FRAMEWORKS:
            continue
        name = f"{_PACKAGE}.{info.name}.cli"
        if importlib.util.find_spec(name) is None:
            continue  # a package with no `corral run` entry (loadtest)
        module = importlib.import_module(name)
        yield name, getattr(module, "FRAMEWORKS", ())


def _from_entry_points() -> Iterable[tuple[str, object]]:
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        origin = f"entry point {ep.name} = {ep.value}"
        try:
            yield origin, ep.load()
        except Exception as err:  # a broken plugin must not break every `corral` command
            print(f"corral: ignoring framework {origin}: {err}", file=sys.stderr)


def discover() -> dict[str, FrameworkCommand]:
    """Every framework by name: this repository's first, then entry points. A name found twice
    keeps the first; a different command under a taken name is reported and ignored."""
    found: dict[str, FrameworkCommand] = {}
    for origin, value in (*_in_tree(), *_from_entry_points()):
        commands = value if isinstance(value, list | tuple) else [value]
        for command in commands:
            if not isinstance(command, FrameworkCommand):
                print(
                    f"corral: ignoring framework {origin}: {command!r} is not a FrameworkCommand",
                    file=sys.stderr,
                )
                continue
            taken = found.get(command.name)
            if taken is not None:
                if taken.run is not command.run:
                    print(
                        f"corral: ignoring framework {command.name!r} of {origin}: "
                        f"the name is taken by {taken.origin}",
                        file=sys.stderr,
                    )
                continue
            found[command.name] = FrameworkCommand(
                command.name,
                command.help,
                command.configure,
                command.run,
                command.description,
                command.origin or origin,
            )
    return found
